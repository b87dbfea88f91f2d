#!/bin/sh
# handoff_cli.sh measures the one-host hand-off through the command line:
# a holder's command ends, a waiting `lockctl run --wait` starts its command;
# the same with flock(1) on one lock file, interleaved round by round so
# that load falls on all alike. Each side's command is `date +%s%N` (the
# holder's runs last, the waiter's first), so both pay the same exec.
#
#   sh tools/bench/handoff_cli.sh [rounds]     (from the repository root)
set -eu
rounds=${1:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/lockctl" ./tools/lockctl
hold='touch "$0.started"; sleep 0.3; date +%s%N > "$0.rel"'

# round NAME HOLDER-PREFIX WAITER-PREFIX: one hand-off, its µs appended to NAME.
round() {
	name=$1 holder=$2 waiter=$3
	rm -f "$work/m.started" "$work/m.rel" "$work/m.acq"
	$holder sh -c "$hold" "$work/m" &
	while [ ! -e "$work/m.started" ]; do sleep 0.01; done
	$waiter sh -c 'date +%s%N > "$0.acq"' "$work/m"
	wait
	echo $(( ($(cat "$work/m.acq") - $(cat "$work/m.rel")) / 1000 )) >> "$work/$name"
}

ctl="$work/lockctl run --key handoff --ttl 1m"
for i in $(seq "$rounds"); do
	round sqlite "$ctl --url sqlite://$work/locks.db --" "$ctl --wait 10s --url sqlite://$work/locks.db --"
	round file "$ctl --url file://$work/dir --" "$ctl --wait 10s --url file://$work/dir --"
	round flock "flock $work/flock" "flock $work/flock"
done
for name in sqlite file flock; do
	sort -n "$work/$name" | awk -v n="$name" '{v[NR]=$1} END {
		printf "%-7s rounds %d  p50 %d µs  p90 %d µs  max %d µs\n", n, NR, v[int((NR+1)/2)], v[int(NR*0.9+0.5)], v[NR] }'
done
