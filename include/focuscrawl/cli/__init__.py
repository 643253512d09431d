"""The ``focuscrawl`` command line and the ``demo`` it runs on the embedded world.
"""
