#!/usr/bin/env bash
# The MCP conformance suite as the referee scores a client: every client
# scenario a spec revision requires, each at that revision's wire
# (--requirements), then the scenarios named in EXTRA one by one.
#
#   referee.sh CLIENT_CMD
#
# Environment:
#   REVISIONS   the revisions to score (default: 2025-11-25 2026-07-28)
#   MUST_PASS   not-scored scenarios (extensions, added after the release)
#               this client implements: each must pass too
#   EXTRA       scenarios in neither requirements file, run by name
#   RESULTS_DIR where the suite writes its checks (default: a temp dir)
#
# A required scenario, one in MUST_PASS or one in EXTRA passes when its
# checks hold at least one SUCCESS and no FAILURE; a required one or one in
# EXTRA must hold no WARNING either. Other not-scored scenarios are shown,
# never counted. The suite's own summary is printed for each run.
# Exit status: 0 when every counted scenario passed, 1 otherwise.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT_CMD="${1:?usage: referee.sh CLIENT_CMD}"
REVISIONS="${REVISIONS:-2025-11-25 2026-07-28}"
RESULTS_DIR="${RESULTS_DIR:-$(mktemp -d -t referee.XXXXXX)}"
mkdir -p "$RESULTS_DIR"

status=0
for rev in $REVISIONS; do
	echo "== --requirements $rev"
	# The suite's exit status counts not-scored scenarios too; the verdict
	# below is the referee's rule.
	timeout -k 5 300 "$HERE/conformance.sh" client --command "$CLIENT_CMD" \
		--requirements "$rev" -o "$RESULTS_DIR/$rev" >"$RESULTS_DIR/$rev.log" 2>&1
	sed -n '/=== SUITE SUMMARY ===/,$p' "$RESULTS_DIR/$rev.log"
	REV="$rev" DIR="$RESULTS_DIR/$rev" MUST_PASS="${MUST_PASS:-}" HERE="$HERE" node -e '
const fs = require("fs"), path = require("path");
const { REV, DIR, MUST_PASS, HERE } = process.env;
const YAML = require(path.join(HERE, "node_modules/yaml"));
const req = YAML.parse(fs.readFileSync(path.join(HERE, "node_modules/@modelcontextprotocol/conformance/requirements", REV + ".yaml"), "utf8"));
const mustPass = new Set(MUST_PASS.split(/\s+/).filter(Boolean));
const notScored = (req.not_scored || []).filter(e => e.leg === "client").map(e => e.scenario);
function checks(name) {
	// <dir>/<name>-<timestamp>/checks.json; auth/x lives in <dir>/auth/.
	const parent = path.join(DIR, path.dirname(name)), base = path.basename(name) + "-";
	let dirs = [];
	try { dirs = fs.readdirSync(parent).filter(d => d.startsWith(base) && /^\d{4}-/.test(d.slice(base.length))).sort(); } catch {}
	if (!dirs.length) return null;
	try { return JSON.parse(fs.readFileSync(path.join(parent, dirs[dirs.length - 1], "checks.json"), "utf8")); } catch { return null; }
}
let bad = 0, passed = 0;
function judge(name, strict, counted) {
	const c = checks(name);
	const n = s => (c || []).filter(x => x.status === s);
	const fail = n("FAILURE"), warn = n("WARNING");
	const ok = c !== null && n("SUCCESS").length > 0 && fail.length === 0 && (!strict || warn.length === 0);
	const tag = counted ? (strict ? "required" : "must pass") : "not scored";
	console.log(`${ok ? "PASS" : "FAIL"} [${tag}] ${name}` + (c === null ? ": no checks recorded" : `: ${n("SUCCESS").length} success, ${fail.length} failure, ${warn.length} warning`));
	for (const x of [...fail, ...warn]) console.log(`    ${x.status} ${x.id}: ${x.errorMessage || x.description}`);
	if (!counted) return;
	if (ok) passed++; else bad++;
}
for (const s of req.client) judge(s, true, true);
for (const s of notScored) judge(s, false, mustPass.has(s));
console.log(`${REV}: ${passed} of ${passed + bad} counted scenarios passed (${req.client.length} required` + (mustPass.size ? `, ${[...mustPass].filter(s => notScored.includes(s)).length} not scored but implemented` : "") + ")");
process.exit(bad ? 1 : 0);
' || status=1
done

if [[ -n "${EXTRA:-}" ]]; then
	echo "== scenarios in no requirements file, by name: $EXTRA"
	NO_WARNINGS=1 SCENARIOS="$EXTRA" RESULTS_DIR="$RESULTS_DIR/extra" \
		"$HERE/run-conformance.sh" "$CLIENT_CMD" || status=1
fi
exit $status
