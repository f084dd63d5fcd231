"""A log of named features (JSON contexts) as numbers, for the doubly robust reward model.

The candidates replay the JSON contexts themselves (:mod:`banditree.evaluation.counterfactual`);
only the reward model ``q(x, a)`` of the doubly robust estimate needs a fixed matrix.
Its schema is inferred from the training rows (:func:`banditree.features.infer_schema`:
each name's first non-null value sets its type), its encoder learns those rows, and
every row is encoded with it.
"""

from __future__ import annotations

import numpy as np

from banditree.features import FeatureEncoder, FeatureSchema, InvalidInput, infer_schema
from banditree.logs import LogTable


def named_columns(table: LogTable, cut: int) -> tuple[np.ndarray, FeatureSchema]:
    """``(n, width)`` encoded contexts of a named log, and the schema that encoded them.

    Raises ``ValueError`` naming the row's offset and the field when a context names no
    feature in every training row, or holds a value its feature's type refuses.
    """
    assert table.objects is not None
    train = list(table.objects[:cut])
    try:
        schema = infer_schema(train)
    except InvalidInput as err:
        raise ValueError(f"{table.name}: the training rows' contexts: {err}") from None
    encoder = FeatureEncoder(schema)
    for t, context in enumerate(train):
        try:
            encoder.update(context)
        except InvalidInput as err:
            raise ValueError(f"log row at offset {int(table.offset[t])}: {err}") from None
    encoder.publish()
    rows = np.zeros((table.n_rows, schema.width))
    for t, context in enumerate(table.objects):
        try:
            rows[t] = encoder.encode(context)
        except InvalidInput as err:
            raise ValueError(f"log row at offset {int(table.offset[t])}: {err}") from None
    return rows, schema
