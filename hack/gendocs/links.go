package main

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// DocFiles are the markdown files whose links CheckLinks follows: the
// README, CONTRIBUTING.md and everything under docs/.
func DocFiles(root string) ([]string, error) {
	files := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing docs: %w", err)
	}
	slices.Sort(files)
	return files, nil
}

// inlineLink is a markdown inline link or image: [text](target "title").
var inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)

// CheckLinks returns one line per relative link in files (paths relative
// to root) that does not resolve: a missing file or directory, or a
// #fragment that names no heading of the markdown file it points into.
// Links with a scheme (https:, mailto:) are not followed.
func CheckLinks(root string, files []string) ([]string, error) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(data))
		anchors[rel] = a
		return a, nil
	}
	var broken []string
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		for lineNo, line := range proseLines(string(data)) {
			if line == "" {
				continue
			}
			for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if u, err := url.Parse(target); err == nil && u.Scheme != "" {
					continue
				}
				pathPart, fragment, _ := strings.Cut(target, "#")
				dest := file
				if pathPart != "" {
					unescaped, err := url.PathUnescape(pathPart)
					if err != nil {
						broken = append(broken, fmt.Sprintf("%s:%d: %s: %v", file, lineNo+1, target, err))
						continue
					}
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), unescaped)))
					if strings.HasPrefix(dest, "../") {
						broken = append(broken, fmt.Sprintf("%s:%d: %s points outside the repository", file, lineNo+1, target))
						continue
					}
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file or directory", file, lineNo+1, target))
						continue
					}
				}
				if fragment == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					return nil, fmt.Errorf("reading %s: %w", dest, err)
				}
				if !a[strings.ToLower(fragment)] {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: %s has no heading #%s", file, lineNo+1, target, dest, fragment))
				}
			}
		}
	}
	return broken, nil
}

// proseLines splits markdown into lines with fenced code blocks and inline
// code spans blanked, so that links shown as code are not followed. Line
// numbers are kept.
func proseLines(md string) []string {
	lines := strings.Split(md, "\n")
	inFence := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
			lines[i] = ""
			continue
		}
		if inFence {
			lines[i] = ""
			continue
		}
		lines[i] = codeSpan.ReplaceAllString(l, "``")
	}
	return lines
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// headingAnchors are the anchors GitHub gives a markdown file's headings.
func headingAnchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, l := range strings.Split(md, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(t, "#") {
			continue
		}
		text := strings.TrimLeft(t, "#")
		if text != "" && text[0] != ' ' {
			continue
		}
		slug := Slug(text)
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

var headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// Slug is GitHub's anchor for a heading's text: links reduced to their
// text, lower case, punctuation dropped (hyphens and underscores kept),
// spaces turned into hyphens.
func Slug(heading string) string {
	heading = headingLink.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
