"""Timely crawling of high-quality ephemeral new content (seed 001, the paper of that title).

Content sources (hubs, category pages, feeds, sitemaps) keep linking to new pages whose value
(future clicks) decays fast after creation. This package decides, for one crawl budget:

- which sources to watch (:mod:`.discovery`, the seed's section 3: a small set covers most profit);
- per-source estimates of the new-link rate λ, the profit P of a new page and its decay μ
  (:mod:`.estimate`, the seed's section 2 profit model ``P·(1−e^(−μ·Δt))``);
- each source's recrawl interval and the order of discovered pages (:mod:`.optimiser`,
  :mod:`.schedulers`);
- the seed's dynamic and overall quality (:mod:`.quality`), measured on a simulated world
  (:mod:`.simulate`).
"""
