#!/bin/sh
# Generates skill/references/ from the knowledge base's guides, so the agent
# skill and the search tools share one source of truth. A guide goes to the
# skill when its tags name an architecture or integration topic, or it is one
# of the guides about kforge's own answers (SKILL_IDS). Usage:
#   knowledge/export-skill-refs.sh knowledge/guides skill/references
set -eu
SKILL_IDS="kforge-spec eval-cheats measuring roofline"
src=$1
dest=$2
rm -rf "$dest"
mkdir -p "$dest"
index="$dest/README.md"
{
	echo "# kforge skill references"
	echo
	echo "Generated at build time from the knowledge base (knowledge/guides/);"
	echo "edit the guides there, not these copies. The same text is served by"
	echo "the \`read_guide\` tool and at \`kforge://guides/<id>\`."
	echo
} >"$index"
for f in "$src"/*.md; do
	[ "$(basename "$f")" = INDEX.md ] && continue
	# The front matter's tags line, e.g. "tags: [integration, numerics]".
	tags=$(awk 'NR==1 && $0!="---"{exit} NR>1 && $0=="---"{exit} /^tags:/{print}' "$f")
	id=$(awk '/^id:/{print $2; exit}' "$f")
	case "$tags" in
	*architecture* | *integration*) ;;
	*) case " $SKILL_IDS " in *" $id "*) ;; *) continue ;; esac ;;
	esac
	title=$(awk '/^title:/{sub(/^title: */, ""); print; exit}' "$f")
	[ -n "$id" ] || { echo "export-skill-refs: $f has no id" >&2; exit 1; }
	{
		echo "<!-- generated from knowledge/guides/$(basename "$f"); edit it there -->"
		# Body without the front matter, then its sources.
		awk 'NR==1 && $0=="---"{fm=1; next} fm && $0=="---"{fm=0; next} !fm{print}' "$f"
		echo
		echo "## Checked on"
		echo
		awk 'NR==1{next} $0=="---"{exit} /^checked:/{sub(/^checked: */, ""); gsub(/^"|"$/, ""); print}' "$f"
		echo
		echo "## Sources"
		awk 'NR==1{next} $0=="---"{exit} /^sources:/{s=1; next} s && /^  - /{print} s && /^[a-z]/{s=0}' "$f"
	} >"$dest/$id.md"
	echo "- [$title]($id.md)" >>"$index"
done
