#!/usr/bin/env bash
# The report's browser test needs Debian's chromium (to open the page headless and take a
# screenshot) and graphviz (to draw the decision trace). Installs them where missing and this
# user may (root with apt-get); otherwise says so, and those tests skip with the reason.
set -u
need=()
command -v chromium >/dev/null || need+=(chromium)
command -v dot >/dev/null || need+=(graphviz)
[ ${#need[@]} = 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "tests/browser/setup.sh: cannot install ${need[*]} (needs root and apt-get); the browser test will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
(apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" fonts-dejavu-core) >/dev/null 2>&1 \
  || echo "tests/browser/setup.sh: apt-get could not install ${need[*]}; the browser test will skip" >&2
exit 0
