"""Embedding sets (and optionally their indexes) -> scored sentence pairs.

``mine_vectors`` (``vectors``) is the pure core: vectors in, scored row pairs out.
``mine_corpora`` (``corpora``) wraps it for embedding sets: it drops blank lines, searches
identical sentences once (``sentences``), uses FAISS indexes when given, and maps pairs back
to text and ``shard:line`` ids. The searches are in ``knn``, the margins and the one-to-one
selection in ``scoring``, the threshold in ``thresholds``, the exact margins of pairs found
through indexes and the scores of given pairs in ``rescore``, files in ``output``.
"""

from bitextmine.embed.corpus import check_compatible
from bitextmine.mine.config import MineConfig
from bitextmine.mine.corpora import MinedPairs, adapted_choice, mine_corpora, write_pairs
from bitextmine.mine.sentences import UniqueSentences, check_k, line_digests, unique_sentences
from bitextmine.mine.vectors import mine_vectors

__all__ = ["MineConfig", "MinedPairs", "UniqueSentences", "adapted_choice", "check_compatible", "check_k",
           "line_digests", "mine_corpora", "mine_vectors", "unique_sentences", "write_pairs"]
