"""``python -m kafkalog.cli``: the ``kafkalog`` command."""

from . import console_main

console_main()
