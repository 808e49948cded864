"""Inline values as JSON carries them exactly: a float that is not finite, which the wire
writes as null (protocol.encode), as {"float": "inf"}, "-inf" or "nan"."""

import math


def value_to_json(value):
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    return value


def value_from_json(data):
    if isinstance(data, dict):
        return float(data["float"])
    return data
