#!/usr/bin/env bash
# Re-vendor the web view's JavaScript from npm (pinned versions) with every licence that ships inside it.
# The package serves these files itself: nothing is fetched when the view runs. Run from the repository root.
set -euo pipefail
CYTOSCAPE=3.35.0
CYTOSCAPE_DAGRE=4.0.1
MERMAID=12.3.0
dest="src/torchtalk/server/view/static/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --no-audit --no-fund --ignore-scripts \
  "cytoscape@$CYTOSCAPE" "cytoscape-dagre@$CYTOSCAPE_DAGRE" "@dagrejs/dagre@3" "mermaid@$MERMAID" >&2)
nm="$work/node_modules"
mkdir -p "$dest/licenses"
cp "$nm/cytoscape/dist/cytoscape.min.js" "$dest/"
cp "$nm/cytoscape-dagre/dist/cytoscape-dagre.min.js" "$dest/"  # bundles @dagrejs/dagre
cp "$nm/mermaid/dist/mermaid.min.js" "$dest/"                  # bundles its dependencies (listed below)
cp "$nm/cytoscape/LICENSE" "$dest/licenses/cytoscape.txt"
cp "$nm/cytoscape-dagre/LICENSE" "$dest/licenses/cytoscape-dagre.txt"
cp "$nm/@dagrejs/dagre/LICENSE" "$dest/licenses/dagre.txt"
cp "$nm/mermaid/LICENSE" "$dest/licenses/mermaid.txt"
# Every package the bundles above may be built from (mermaid's dependencies, dagre's graphlib), with its licence.
rm -f "$dest/licenses/mermaid-bundled.txt"
out="$dest/licenses/bundled.txt"
: > "$out"
(cd "$work" && npm ls --all --parseable) | tail -n +2 | sort -u | while read -r dir; do
  name=$(node -p "require('$dir/package.json').name + '@' + require('$dir/package.json').version")
  lic=$(node -p "JSON.stringify(require('$dir/package.json').license || '')")
  case "$name" in mermaid@*|cytoscape@*|cytoscape-dagre@*|@dagrejs/dagre@*) continue;; esac
  printf '=== %s (%s)\n' "$name" "$lic" >> "$out"
  file=$(ls "$dir" | grep -i -m1 -E '^(licen[cs]e|copying)' || true)
  if [ -n "$file" ]; then cat "$dir/$file" >> "$out"; else echo "(no licence file in the package; licence field: $lic)" >> "$out"; fi
  printf '\n' >> "$out"
done
(cd "$dest" && sha256sum cytoscape.min.js cytoscape-dagre.min.js mermaid.min.js > SHA256SUMS)
cat > "$dest/VERSIONS" <<VERS
cytoscape $CYTOSCAPE (MIT)
cytoscape-dagre $CYTOSCAPE_DAGRE (MIT; bundles @dagrejs/dagre, MIT, and @dagrejs/graphlib, in licenses/bundled.txt)
mermaid $MERMAID (MIT; bundles its dependencies: their licences are in licenses/bundled.txt)
VERS
echo "vendored into $dest" >&2
