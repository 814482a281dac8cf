#!/bin/sh
# Install Debian's Chromium and chromedriver for the browser test of `benchsel report`
# (tests/test_report.py). Without apt-get (not Debian) or without root and sudo, say so
# and go on: that one test is then skipped. A failing install on Debian is an error.
set -e
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: no apt-get here; the report's browser test will be skipped" >&2
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    apt="apt-get"
elif command -v sudo >/dev/null 2>&1; then
    apt="sudo apt-get"
else
    echo "install-chromium: not root and no sudo; the report's browser test will be skipped" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
start=$(date +%s)
echo "install-chromium: installing chromium and chromium-driver with apt-get" \
    "(about a minute; for the report's browser test)" >&2
# The package lists may be stale: refresh them once if the first try fails.
$apt install -y -q chromium chromium-driver >/dev/null \
    || { echo "install-chromium: refreshing the package lists and trying again" >&2 \
         && $apt update -q >/dev/null \
         && $apt install -y -q chromium chromium-driver >/dev/null; }
echo "install-chromium: done in $(( $(date +%s) - start )) s" >&2
