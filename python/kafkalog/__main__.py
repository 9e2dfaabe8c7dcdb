"""``python -m kafkalog``: the ``kafkalog`` command (see :mod:`kafkalog.cli`)."""

from .cli import console_main

console_main()
