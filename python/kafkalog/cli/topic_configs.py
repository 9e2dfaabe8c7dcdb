"""Topic configs for the commands that open logs (``stats``, ``compact``, ``retention``).

Kafka keeps topic configs in the cluster metadata, never in a log dir, so a command is told them:
``--config key=value`` for every topic, ``--topic-config TOPIC:key=value`` for one (it wins),
Kafka's defaults for the rest. Each is checked by the engine's topic table
(:func:`kafkalog._native.validate_topic_config`) before anything is opened; a bad key or value is
a usage error naming it. The output says which config each partition was read with.

Thread-safety: plain data.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from .._native import validate_topic_config
from ..exceptions import KafkaLogError
from . import UsageError

__all__ = ["TopicConfigs", "add_arguments", "from_args", "BROKER_KEYS_HINT"]

BROKER_KEYS_HINT = "topic keys as Kafka names them (cleanup.policy, retention.ms, min.cleanable.dirty.ratio, ...)"


@dataclass(frozen=True)
class TopicConfigs:
    """The ``--config`` pairs for every topic and the ``--topic-config`` pairs by topic."""

    common: dict[str, str] = field(default_factory=dict)
    per_topic: dict[str, dict[str, str]] = field(default_factory=dict)

    def for_topic(self, topic: str) -> tuple[dict[str, str], dict[str, str]]:
        """The overrides for ``topic`` (the rest are Kafka's defaults) and where each came from
        (``--config`` or ``--topic-config``)."""
        values = dict(self.common)
        sources = {k: "--config" for k in self.common}
        for k, v in self.per_topic.get(topic, {}).items():
            values[k] = v
            sources[k] = "--topic-config"
        return values, sources

    def describe(self, topic: str) -> str:
        """One line: ``Kafka's defaults`` or ``Kafka's defaults, with k=v (--config), ...``."""
        values, sources = self.for_topic(topic)
        if not values:
            return "Kafka's defaults (no --config / --topic-config given)"
        given = ", ".join(f"{k}={v} ({sources[k]})" for k, v in sorted(values.items()))
        return f"Kafka's defaults, with {given}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "topic configs (a log dir does not hold them: Kafka keeps them in the cluster metadata)"
    )
    group.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a topic config for every topic ({BROKER_KEYS_HINT}); repeatable",
    )
    group.add_argument(
        "--topic-config",
        action="append",
        default=[],
        metavar="TOPIC:KEY=VALUE",
        help="a topic config for one topic, over --config; repeatable",
    )


def _pair(option: str, text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{option} {text!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def _checked(option: str, pairs: dict[str, str]) -> None:
    try:
        validate_topic_config(sorted(pairs.items()))
    except KafkaLogError as e:
        raise UsageError(f"{option}: {e}") from None


def from_args(args: argparse.Namespace) -> TopicConfigs:
    """The parsed and checked configs; :class:`UsageError` names a malformed or invalid one."""
    common = dict(_pair("--config", text) for text in args.config)
    _checked("--config", common)
    per_topic: dict[str, dict[str, str]] = {}
    for text in args.topic_config:
        topic, sep, rest = text.partition(":")
        if not sep or not topic:
            raise UsageError(f"--topic-config {text!r}: expected TOPIC:KEY=VALUE")
        key, value = _pair("--topic-config", rest)
        per_topic.setdefault(topic, {})[key] = value
    for topic, pairs in per_topic.items():
        _checked(f"--topic-config {topic}", {**common, **pairs})
    return TopicConfigs(common, per_topic)
