package shardid_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// markdownLink is an inline link, its text possibly wrapped over lines.
var markdownLink = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)

// codeSpan is inline code, where gorm.G[T](tx) is no link.
var codeSpan = regexp.MustCompile("`[^`]*`")

// TestDocLinks checks that every relative link of the README and the pages
// under docs/ names a file that exists and, for a page, a heading it has.
func TestDocLinks(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "README.md")
	for _, page := range pages {
		for _, target := range markdownLinks(t, page) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			if filepath.IsAbs(file) {
				t.Errorf("%s: %s: a link within the repository is relative", page, target)
				continue
			}
			if file == "" {
				file = page
			} else {
				file = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: %s: %v", page, target, err)
				continue
			}
			if anchor != "" && !headingAnchors(t, file)[anchor] {
				t.Errorf("%s: %s: %s has no heading #%s", page, target, file, anchor)
			}
		}
	}
}

// TestReadmeQuickstartIsExample checks that the README's quickstart is the
// code Example runs, but for the errors Example checks and the folder of its
// database file.
func TestReadmeQuickstartIsExample(t *testing.T) {
	readme := readFile(t, "README.md")
	_, after, _ := strings.Cut(readme, "## Quickstart\n\n```go\n")
	quickstart, _, _ := strings.Cut(after, "```")
	source := readFile(t, "example_test.go")
	_, body, _ := strings.Cut(source, "func Example() {\n")
	body, _, _ = strings.Cut(body, "// Output:")
	checked := regexp.MustCompile(`check\((.*?)(\.Error)?\)(\s*//|$)`)
	var ran []string
	for _, line := range strings.Split(body, "\n") {
		ran = append(ran, squash(checked.ReplaceAllString(strings.TrimSpace(line), "$1$3")))
	}
	models := squash(source)
	for _, line := range strings.Split(quickstart, "\n") {
		if line = squash(line); line == "" || strings.Contains(line, "gorm.Open(") {
			continue
		}
		if !strings.Contains(models, line) && !slices.Contains(ran, line) {
			t.Errorf("README quickstart line %q is not in Example", line)
		}
	}
}

// markdownLinks returns the link targets of a Markdown file, outside code.
func markdownLinks(t *testing.T, path string) []string {
	var targets []string
	for _, m := range markdownLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(prose(readFile(t, path)), "``"), -1) {
		targets = append(targets, m[1])
	}
	return targets
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces as hyphens, a
// repeated one numbered.
func headingAnchors(t *testing.T, path string) map[string]bool {
	anchors, seen := map[string]bool{}, map[string]int{}
	for _, line := range strings.Split(prose(readFile(t, path)), "\n") {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		anchor := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, title)
		if n := seen[anchor]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", anchor, n)] = true
		} else {
			anchors[anchor] = true
		}
		seen[anchor]++
	}
	return anchors
}

// prose returns a Markdown text without its fenced code blocks.
func prose(text string) string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// squash collapses every run of white space to one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
