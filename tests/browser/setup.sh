#!/usr/bin/env bash
# Installs what the browser test needs, and nothing when it is already there:
#   - Debian's Chromium (/usr/bin/chromium), with apt-get, only if it is missing;
#   - playwright-core and axe-core (the accessibility rules run in the pages people open), pinned in
#     package.json/package-lock.json, into tests/browser/node_modules.
# playwright-core never downloads a browser; the test drives /usr/bin/chromium.
#
# Exit status: 0 ready; 3 something could not be installed here (no root, no network,
# no Node.js): tests/test_browser.py then skips with this script's message; anything else is a bug.
set -uo pipefail
cd "$(dirname "$0")"

unavailable() {
    echo "setup.sh: $*" >&2
    exit 3
}

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
    if [ "$(id -u)" = 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    else
        unavailable "$CHROMIUM is missing and installing Debian's chromium needs root (or password-less sudo)"
    fi
    command -v apt-get >/dev/null 2>&1 || unavailable "$CHROMIUM is missing and there is no apt-get to install it"
    echo "setup.sh: installing Debian's chromium with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    log=$(mktemp)
    # Only what headless Chromium needs: its dependencies and one font family
    # (the recommends pull in systemd, avahi, printing and desktop services).
    if ! { "${SUDO[@]}" apt-get update -qq \
           && "${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-liberation; } >"$log" 2>&1; then
        tail -n 15 "$log" >&2
        rm -f "$log"
        unavailable "apt-get could not install chromium (no network or no Debian archive?)"
    fi
    rm -f "$log"
    [ -x "$CHROMIUM" ] || unavailable "apt-get installed chromium but $CHROMIUM is missing"
fi

command -v node >/dev/null 2>&1 || unavailable "Node.js (node) is not installed"
command -v npm >/dev/null 2>&1 || unavailable "npm is not installed"

wanted=$(node -p "require('./package.json').dependencies['playwright-core']")
installed=$(node -p "try { require('./node_modules/playwright-core/package.json').version } catch { '' }")
wanted_axe=$(node -p "require('./package.json').dependencies['axe-core']")
installed_axe=$(node -p "try { require('./node_modules/axe-core/package.json').version } catch { '' }")
if [ "$installed" != "$wanted" ] || [ "$installed_axe" != "$wanted_axe" ]; then
    echo "setup.sh: installing playwright-core $wanted with npm ci" >&2
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2 \
        || unavailable "npm ci (playwright-core $wanted) failed (no access to the npm registry?)"
fi
echo "setup.sh: ready: $("$CHROMIUM" --version 2>/dev/null | head -1), playwright-core $wanted, axe-core $wanted_axe" >&2
