"""kafkalog's development kit: what the test suites (tests/python, tests/spark, tests/interop)
and the Python benches (benches/) share. Dev-only: not part of the ``kafkalog`` package.

- ``kit.kafka_harness``: real Apache Kafka from Maven Central jars (a KRaft broker,
  DumpLogSegments, Kafka's cleaner and storage classes through the Java drivers in
  ``jvm/java/``; ``jvm/pom.xml`` and ``jvm/fetch-deps.sh`` resolve the jars into the
  gitignored ``jvm/.cache/``).

Importable as ``kit`` because tests/ is on the path twice over: pytest's ``pythonpath``
setting (pyproject.toml) for the suites, and the ``kafkalog-dev.pth`` file that the Makefile
writes into the venv's site-packages for everything else run with the venv's Python (the
benches, subprocesses, Spark's Python workers). Nothing here starts a thread or touches the
disk at import.
"""
