#!/usr/bin/env bash
# Fetch GitHub's published OpenAPI description (npm package @octokit/openapi, pinned) and print
# the directory holding the files the tests judge the fake GitHub by (tests/fake_github/openapi.py):
#   export GITHUB_OPENAPI_DIR=$(scripts/fetch_github_openapi.sh)
# The package is about 28 MB; only three files are unpacked, into a cache kept between runs.
set -euo pipefail
version=23.0.2
integrity="sha512-pV8M7L9GY23AybNvTmo2nyjmpmnt6+2sRE/tqr0ZLQcPS4lnw7u5eZGNmwRNkBC3D7gZXbFx5AHzLUVRBXGDhg=="
files=(api.github.com.json ghec.json ghes-3.17.json)
cache="${GITHUB_OPENAPI_CACHE:-${TMPDIR:-/tmp}/github-openapi-$version}"
generated="$cache/package/generated"

present=true
for file in "${files[@]}"; do
    [ -s "$generated/$file" ] || present=false
done
if ! $present; then
    command -v npm >/dev/null || { echo "npm is needed to fetch @octokit/openapi" >&2; exit 1; }
    mkdir -p "$cache"
    (cd "$cache" && npm pack --silent --json "@octokit/openapi@$version" >pack.json)
    # npm checks the tarball against the registry's integrity; this checks it is the one pinned.
    if ! grep -q "\"integrity\": \"$integrity\"" "$cache/pack.json"; then
        echo "@octokit/openapi@$version is not the pinned tarball ($integrity)" >&2
        exit 1
    fi
    tar -xzf "$cache/octokit-openapi-$version.tgz" -C "$cache" \
        "${files[@]/#/package/generated/}"
    rm -f "$cache/octokit-openapi-$version.tgz" "$cache/pack.json"
fi
echo "$generated"
