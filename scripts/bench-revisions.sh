#!/usr/bin/env bash
# Builds each git revision given into .bench-revisions/<rev>/ (a worktree each, dependencies from
# the local pnpm store), then benches their Docker backends side by side in one run:
#
#   bash scripts/bench-revisions.sh 3d907b9 HEAD
#
# Needs the engines (scripts/engines.sh). Safe to run twice: built revisions are reused.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BERTH_ROOT"
ensure_dependencies
bash scripts/engines.sh
[ "$#" -gt 0 ] || { echo "usage: bash scripts/bench-revisions.sh REV [REV...]" >&2; exit 125; }
names=()
for revision in "$@"; do
  commit="$(git rev-parse --short=12 "$revision^{commit}")"
  folder=".bench-revisions/$commit"
  if [ ! -f "$folder/.built" ]; then
    say "building $revision ($commit) in $folder"
    rm -rf "$folder"
    git worktree prune
    git worktree add --detach "$folder" "$commit" >/dev/null
    (cd "$folder" && pnpm install --frozen-lockfile --offline >/dev/null 2>&1 || pnpm install --frozen-lockfile >/dev/null) || { say "pnpm install failed in $folder"; exit 1; }
    (cd "$folder" && pnpm -s turbo run build --filter @berth/backend-docker... --output-logs=errors-only >/dev/null) || { say "the build failed in $folder"; exit 1; }
    touch "$folder/.built"
  fi
  names+=("$commit")
done
node scripts/bench-revisions.mjs "${names[@]}"
