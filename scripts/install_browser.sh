#!/usr/bin/env bash
# Install headless Chromium and its WebDriver from Debian (chromium, chromium-driver) for the web
# page's test (tests/test_server_browser.py). Where that cannot be done (not Debian, no root and no
# passwordless sudo, no package registry), say so and succeed: the browser test then skips.
# Nothing is fetched from outside the package registries (no Playwright or Selenium Manager download).
#
# Usage: bash scripts/install_browser.sh        (idempotent)
set -uo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: no apt-get here; the browser test will skip" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "install_browser: not root and no passwordless sudo; the browser test will skip" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null 2>&1; then
  $SUDO apt-get update -qq >/dev/null 2>&1 || true
  $SUDO apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null 2>&1 \
    || echo "install_browser: apt-get could not install chromium; the browser test will skip" >&2
fi
exit 0
