# plantlib.sh: the frame the *-plants.sh scripts share (source it: . scripts/plantlib.sh).
#   plant_in F      keep a copy of F, put back by cp when the script ends however it ends (a
#                   plant never outlives its run), and checked with cmp
#   plant OLD NEW   replace the first OLD in F by NEW; a plant whose OLD is not there any more
#                   fails the script rather than running the tests on unplanted code
#   planted         show the planted change (git diff --stat)
#   gotest RE ARGS  go test -count=1 ARGS, niced, keeping the lines that say what failed (---,
#                   ok, FAIL, and lines matching RE), at most $LINES_MAX (12)
# PLANT_DIR (/tmp/plants.<uid>) holds the copies. PLANT_DRY=1 plants and restores without
# testing: whether each plant still applies to the code as it is.
set -e
cd "$(git rev-parse --show-toplevel)"
PLANT_DIR=${PLANT_DIR:-/tmp/plants.$(id -u)}

plant_in() {
	F=$1
	mkdir -p "$PLANT_DIR"
	PLANT_SAVED=$PLANT_DIR/$(echo "$F" | tr / _).orig
	cp "$F" "$PLANT_SAVED"
	trap 'cp "$PLANT_SAVED" "$F"; cmp -s "$PLANT_SAVED" "$F" || echo "plantlib: $F NOT restored (copy: $PLANT_SAVED)" >&2' EXIT
	trap 'exit 130' INT TERM HUP
}

plant() {
	python3 -c 'import sys
p, old, new = sys.argv[1:4]
s = open(p).read()
if old not in s:
    sys.exit("plantlib: not in %s: %r" % (p, old))
open(p, "w").write(s.replace(old, new, 1))' "$F" "$1" "$2"
}

planted() { git diff --stat -- "$F"; }

gotest() {
	[ -z "$PLANT_DRY" ] || return 0
	re=$1
	shift
	nice -n 10 go test -count=1 "$@" 2>&1 | grep -E "^(---|ok|FAIL)|$re" | head -"${LINES_MAX:-12}" || true
}
