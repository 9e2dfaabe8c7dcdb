"""Fixtures for the interop suite: real Apache Kafka (jars from Maven Central, see
tests/kit/jvm/pom.xml and fetch-deps.sh) against kafkalog, in both directions.

- ``kafka_jars`` (session): the resolved jar folder and the compiled tests/kit/jvm/java helpers.
- ``kafka_broker``: a factory; ``kafka_broker()`` formats and starts a single-node KRaft
  broker on reserved free 127.0.0.1 ports (kafka_harness.PortReservation) in a fresh temp dir,
  with a cluster id derived from the test's id. Teardown always kills a broker the test left
  running, even when the test failed, and frees its ports.

Every test here gets the ``interop`` marker. ``make test`` runs them; ``make test-interop``
runs only them.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka  # noqa: F401  (its import-time deprecation noise, once, quietly)

from kit.kafka_harness import (
    CACHE,
    KafkaBroker,
    KafkaJars,
    compile_helpers,
    fetch_jars,
    kafka_version,
)

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.interop)


def pytest_report_header(config: pytest.Config) -> list[str]:
    lib = CACHE / "lib"
    jars = sorted(lib.glob("kafka_2.13-*.jar")) if lib.is_dir() else []
    return [f"interop: Kafka jars {jars[0].name if jars else '(not fetched yet)'}"]


@pytest.fixture(scope="session")
def kafka_jars() -> KafkaJars:
    for tool in ("java", "javac", "mvn"):
        if shutil.which(tool) is None:
            # The machine ships Java and Maven; without them the suite cannot prove anything,
            # and a skip would read as a pass.
            pytest.fail(f"interop tests need {tool} on PATH (OpenJDK 17 and Maven)")
    lib = fetch_jars()
    return KafkaJars(lib=lib, classes=compile_helpers(lib), version=kafka_version(lib))


@pytest.fixture
def kafka_broker(
    kafka_jars: KafkaJars, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Callable[..., KafkaBroker]]:
    """``kafka_broker(overrides)`` -> a started KafkaBroker (``start=False``: formatted, not
    started). Overrides are server.properties entries, e.g. ``{"log.cleaner.backoff.ms": "100"}``."""
    brokers: list[KafkaBroker] = []

    def start(overrides: dict[str, str] | None = None, *, start: bool = True) -> KafkaBroker:
        work = tmp_path_factory.mktemp("kafka-broker")
        # The cluster id and the ports' search start come from the test's id: repeatable.
        broker = KafkaBroker(kafka_jars, work, overrides, name=f"{request.node.nodeid} broker {len(brokers)}")
        brokers.append(broker)
        if start:
            broker.start()
        return broker

    try:
        yield start
    finally:
        failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
        for broker in brokers:
            broker.release()
            if failed:
                print(f"\n[broker {broker.bootstrap} in {broker.work_dir}]\n{broker.log_tail(20)}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep
