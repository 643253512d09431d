"""`focuscrawl report NAME`: reports in the seed papers' form (tables and PNG plots)."""
