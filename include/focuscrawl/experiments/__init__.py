"""`focuscrawl experiment NAME`: policies compared side by side on the same world, plotted and tabled."""
