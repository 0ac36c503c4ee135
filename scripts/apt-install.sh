#!/bin/sh
# apt-install.sh [APT-OPTION...] PACKAGE...: installs Debian packages for make test-deps, quietly. It waits for
# dpkg's lock (another apt-get, or unattended-upgrades on a fresh machine, may hold it) rather than
# fail, and refreshes the package lists once if the first try fails. Exits non-zero if the packages
# could not be installed.
APT="apt-get -o DPkg::Lock::Timeout=600 -y"
export DEBIAN_FRONTEND=noninteractive
$APT install "$@" >/dev/null 2>&1 && exit 0
$APT update >/dev/null 2>&1 && $APT install "$@" >/dev/null 2>&1
