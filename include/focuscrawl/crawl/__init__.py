"""Crawlers: what to fetch, in which order, and what to emit (the site-specific part of crawling)."""
