"""Focused user extraction (seed 000, *Real-time focused extraction of social media users*): evidence, ranking methods,
the user chooser, the user classifier, pseudo-training and harvest metrics.

Pure domain code: no Kafka, Spark or Airflow imports; the stream processes and DAGs call it.
"""

from focuscrawl.fue.chooser import UserChooser
from focuscrawl.fue.classifier import UserClassifier, short_evidence_corpus
from focuscrawl.fue.evidence import EvidenceAggregator, Post, UserEvidence, hour_distance
from focuscrawl.fue.methods import RANKING_METHODS, RankingMethod, mean_rank_fusion
from focuscrawl.fue.metrics import Extraction, curve, extracted_per_hour, harvest_ratio, ratio_to_baseline
from focuscrawl.fue.pseudo import PseudoLabelling, PseudoTrainer, retrain_and_rescore

__all__ = [
    "RANKING_METHODS",
    "EvidenceAggregator",
    "Extraction",
    "Post",
    "PseudoLabelling",
    "PseudoTrainer",
    "RankingMethod",
    "UserChooser",
    "UserClassifier",
    "UserEvidence",
    "curve",
    "extracted_per_hour",
    "harvest_ratio",
    "hour_distance",
    "mean_rank_fusion",
    "ratio_to_baseline",
    "retrain_and_rescore",
    "short_evidence_corpus",
]
