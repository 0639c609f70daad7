"""Build a frozen model from values a caller has already checked against every rule of the model.

:func:`prebuilt` gives the same instance pydantic's validation gives for the same input (the same
``__dict__`` in field order, the same fields set, no extra, no private state), without running the
validators again.  It exists for bulk reads of the durable store, where each row's values pass a
check that accepts only a subset of what validation accepts (see
:mod:`relavium_reference._rules.history_fast`); anything else must go through validation.
``BaseModel.model_construct`` does the same job in general and is slower than validation itself.

Only for frozen models without private attributes, ``model_post_init`` or ``extra="allow"`` (all the
wire models): :func:`prebuilt_supported` says whether a class qualifies, and the tests hold every
class built this way to it.  Being frozen is what lets many instances share one fields set (a row's
fields set is one of a few): pydantic changes an instance's set in place only on field assignment,
which a frozen model refuses, and ``model_copy`` copies the set first.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["prebuilt", "prebuilt_parts", "prebuilt_supported"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set_dict = object.__setattr__
# The slots pydantic keeps beside ``__dict__`` (their descriptors set them without __setattr__).
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def prebuilt(cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """An instance of ``cls`` holding ``values`` (every field, in declaration order) as validated.

    ``fields_set`` names the fields the input gave (the others hold their defaults); the instance
    keeps this very set, which other instances of a frozen model may share (see the module docstring).
    """
    instance = _new(cls)
    _set_dict(instance, "__dict__", values)
    _set_fields_set(instance, fields_set)
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance


def prebuilt_parts() -> tuple[Any, Any, Any, Any, Any]:
    """The five steps of :func:`prebuilt` (new, ``__dict__``, fields set, extra, private), for a hot loop."""
    return _new, _set_dict, _set_fields_set, _set_extra, _set_private


def prebuilt_supported(cls: type[BaseModel]) -> bool:
    """Whether :func:`prebuilt` builds ``cls`` as validation would (frozen, closed, no private state)."""
    return (
        bool(cls.model_config.get("frozen"))
        and not cls.__private_attributes__
        and not cls.__pydantic_post_init__
        and cls.model_config.get("extra") == "forbid"
        and not cls.__pydantic_root_model__
    )
