"""The benchmark's gram table: which items hold which grams (pure, no database)."""

from __future__ import annotations

import numpy as np

from contam.app.core.items import _GramTable


def test_groups_of_lists_every_holder_of_each_gram_in_order() -> None:
    """Random tables against a plain reference: for each gram asked, in order, the groups
    holding it (ascending), unless more than max_items groups hold it."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(0, 30))
        grams = [rng.integers(0, 40, int(rng.integers(0, 10))) for _ in range(n)]
        table = _GramTable(grams, list(range(n)))
        asked = rng.integers(0, 50, int(rng.integers(0, 20)))
        limit = int(rng.integers(0, 5))
        expected: list[int] = []
        for g in asked.tolist():
            holders = sorted({k for k, held in enumerate(grams) if g in held.tolist()})
            if holders and len(holders) <= limit:
                expected += holders
        assert table.groups_of(asked, limit).tolist() == expected
        assert table.freq(asked).tolist() == [sum(g in held.tolist() for held in grams) for g in asked.tolist()]
