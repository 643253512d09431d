"""Look back, look around: which known page to revisit for new outlinks.

Seed 002 (Look back, look around: a systematic analysis of effective
predictors for new outlinks in focused Web crawling). The pieces, each pure Python testable
without Spark:

- :mod:`.revisit`: the page revisitor: every known page once per period, best pushed priority first,
  snapshots (outlinks internal/external, content digest without outlinks) to Delta;
- :mod:`.urls`: internal versus external outlinks by registered domain (or the world's virtual host);
- :mod:`.targets`: new outlinks per page and period (NNL, NL) and the link change rate (LCR);
- :mod:`.embedding`: TF-IDF then LSA (truncated SVD) content vectors;
- :mod:`.related`: the k=30 content-related pages on FAISS, exact (flat) or approximate (HNSW, IVF);
- :mod:`.features`: the static/dynamic x page/network taxonomy, with LBLA (look back, look around);
- :mod:`.models`: ExtraTrees, NGBoost-Poisson and the NNL-Av, NNL-Pr, CCR baselines, by name;
- :mod:`.evaluation`: Spearman's rho and Precision@k% with its area;
- :mod:`.store`: versioned model registry with a not-worse promotion rule;
- :mod:`.synthetic`: weekly snapshots whose link change is correlated among similar pages;
- :mod:`.experiment`: the whole chain on pandas frames (tests, report).
"""
