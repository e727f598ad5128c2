#!/usr/bin/env bash
# Installs Debian's chromium when it is missing, for the reports package's
# browser test (reports/browser_test.go), which opens every page of a
# generated report headless and fails on any console error.
#
#   .ci/chromium.sh        # no-op when /usr/bin/chromium (or $CHROMIUM) exists
#
# The test itself needs no network: it loads file:// pages with the network
# features that phone home switched off.
set -euo pipefail

log() { echo "chromium.sh: $*" >&2; }

bin=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$bin" ]; then
	log "found $bin: $("$bin" --version 2>/dev/null || echo 'version unknown')"
	exit 0
fi
log "chromium not found; installing Debian's package"
export DEBIAN_FRONTEND=noninteractive
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends chromium fonts-dejavu-core
log "installed: $(/usr/bin/chromium --version)"
