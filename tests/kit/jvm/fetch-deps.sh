#!/usr/bin/env bash
# Resolves the Kafka jars of the interop tests and the benches' Kafka side from Maven Central into
# tests/kit/jvm/.cache/lib.
# Does nothing when the cache is complete and pom.xml has not changed since it was filled
# (a stamp holding the pom's sha256). Prints the lib directory on success.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="$here/.cache"
lib="$cache/lib"
stamp="$cache/deps.stamp"
want="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$lib" ]]; then
    echo "$lib"
    exit 0
fi

command -v mvn >/dev/null || { echo "fetch-deps.sh: mvn (Maven) is not installed" >&2; exit 1; }
command -v java >/dev/null || { echo "fetch-deps.sh: java is not installed" >&2; exit 1; }

mkdir -p "$cache"
rm -rf "$lib" "$stamp" "$lib.tmp"
# -B: batch mode, no colour codes; output goes to a log so a failure can be read back.
if ! mvn -B -q -f "$here/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$lib.tmp" -DincludeScope=runtime >"$cache/mvn.log" 2>&1; then
    cat "$cache/mvn.log" >&2
    echo "fetch-deps.sh: mvn dependency:copy-dependencies failed (log: $cache/mvn.log)" >&2
    exit 1
fi
mv "$lib.tmp" "$lib"
echo "$want" >"$stamp"
echo "$lib"
