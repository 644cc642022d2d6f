package locale

import (
	"testing"

	"k8s.io/kubectl/pkg/util/i18n"
)

func TestNeedsCatalog(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set: kubectl's default catalog", nil, false},
		{"C with an encoding", map[string]string{"LANG": "C.UTF-8"}, false},
		{"C without an encoding", map[string]string{"LANG": "C"}, false},
		{"POSIX", map[string]string{"LANG": "POSIX.UTF-8"}, false},
		{"American English", map[string]string{"LANG": "en_US.UTF-8"}, false},
		{"a language without an encoding is kubectl's default", map[string]string{"LANG": "de_DE"}, false},
		{"German", map[string]string{"LANG": "de_DE.UTF-8"}, true},
		{"British English has no catalog of its own but is not skipped", map[string]string{"LANG": "en_GB.UTF-8"}, true},
		{"LC_ALL comes first", map[string]string{"LC_ALL": "ja_JP.UTF-8", "LANG": "C.UTF-8"}, true},
		{"LC_MESSAGES before LANG", map[string]string{"LC_MESSAGES": "C.UTF-8", "LANG": "fr_FR.UTF-8"}, false},
		{"LANG when the others are empty", map[string]string{"LC_ALL": "", "LC_MESSAGES": "", "LANG": "zh_CN.UTF-8"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsCatalog(func(k string) string { return tt.env[k] }); got != tt.want {
				t.Errorf("needsCatalog(%v) = %v, want %v", tt.env, got, tt.want)
			}
		})
	}
}

// TestUntranslatedMessagesAreThemselves checks what skipping the catalog
// relies on: with none loaded, i18n.T returns the message itself.
func TestUntranslatedMessagesAreThemselves(t *testing.T) {
	t.Setenv("LC_ALL", "C.UTF-8")
	for _, msg := range []string{
		"Print the supported API resources on the server",
		"If true, keep the original pod labels.(This flag only works when used with '--copy-to')",
	} {
		if got := i18n.T(msg); got != msg {
			t.Errorf("i18n.T(%q) = %q", msg, got)
		}
	}
}
