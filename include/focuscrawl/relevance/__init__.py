"""Page relevance: how much a fetched page is about the user's topic, learned from example pages.

- :mod:`.examples`: the example pages a project's ``[profile.pages]`` declares (URLs fetched once
  through the fetch layer, local HTML or text files, JSONL ``{"url", "text", "label"}``, a query);
- :mod:`.models`: the registered page relevance models behind one protocol, calibrated to [0, 1];
- :mod:`.evaluation`: train/evaluation splits that never share a page, held-out AUC and precision
  at the operating threshold with bootstrap intervals;
- :mod:`.train`: ``focuscrawl train``'s step for pages: fit, evaluate, version, promote.
"""
