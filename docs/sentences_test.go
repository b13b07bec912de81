package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// maxSentenceWords is the longest sentence docs/architecture.md may have:
// a newcomer reads the map of the project once, and a sentence past this
// is a list or two sentences.
const maxSentenceWords = 60

// sentenceEnd ends a sentence: a full stop, question or exclamation mark
// before the next one's first word.
var sentenceEnd = regexp.MustCompile("[.!?]\\s+[A-Z0-9`(*\"]")

// sentences are the sentences of a Markdown text's prose: code blocks and
// table rows left out, each heading and list item a start of its own.
func sentences(md string) []string {
	var out, para []string
	flush := func() {
		text := strings.Join(para, " ")
		for {
			loc := sentenceEnd.FindStringIndex(text)
			if loc == nil {
				break
			}
			out = append(out, text[:loc[0]+1])
			text = text[loc[1]-1:]
		}
		if strings.TrimSpace(text) != "" {
			out = append(out, text)
		}
		para = nil
	}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```"):
			flush()
			fenced = !fenced
		case fenced:
		case t == "" || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "#"):
			flush()
		case strings.HasPrefix(t, "- ") || regexp.MustCompile(`^\d+\. `).MatchString(t):
			flush()
			para = append(para, t)
		default:
			para = append(para, t)
		}
	}
	flush()
	return out
}

// TestArchitectureSentencesAreShort holds docs/architecture.md to
// maxSentenceWords a sentence.
func TestArchitectureSentencesAreShort(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sentences(string(data)) {
		if n := len(strings.Fields(s)); n > maxSentenceWords {
			t.Errorf("docs/architecture.md has a sentence of %d words, more than %d: %q", n, maxSentenceWords, s)
		}
	}
}

func TestSentencesSplitsProse(t *testing.T) {
	long := strings.Repeat("word ", maxSentenceWords+1)
	got := sentences("# Title\n\nOne two. Three `four` five.\n\n- an item\n- another. And more\n\n| a | b. C |\n\n```\nnot. Prose\n```\n" + long + "\n")
	want := []string{"One two.", "Three `four` five.", "- an item", "- another.", "And more", strings.TrimSpace(long)}
	if len(got) != len(want) {
		t.Fatalf("sentences = %q, want %q", got, want)
	}
	for i := range want {
		if strings.TrimSpace(got[i]) != want[i] {
			t.Errorf("sentence %d = %q, want %q", i, got[i], want[i])
		}
	}
}
