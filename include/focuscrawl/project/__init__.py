"""The crawl project file (``focuscrawl.toml``): its model, its loading and errors, the example files a
profile reads, and the template ``focuscrawl init`` writes.
"""
