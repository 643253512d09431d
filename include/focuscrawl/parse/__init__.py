"""Parsers for what crawlers fetch: listing JSON, HTML links, RSS/Atom feeds, sitemaps, robots.txt.

Every parser takes the raw body and the URL and returns its result together with a list of
:class:`Rejection`: malformed input never raises and is never dropped silently.
"""

from focuscrawl.parse.rejection import DeadLetter, Rejection, rejection_counts

__all__ = ["DeadLetter", "Rejection", "rejection_counts"]
