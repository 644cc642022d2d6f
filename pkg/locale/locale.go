// Package locale decides, before any package asks kubectl for a
// translated message, whether kubectl's message catalog needs loading at
// all.
//
// kubectl's packages translate their help texts with i18n.T, and one the
// plugin links (k8s.io/kubectl/pkg/cmd/apiresources, through
// k8s.io/kubectl/pkg/drain) does so while it is initialised: the first call
// unpacks and parses a catalog of ~200 kB, ~20 ms of every run's start on
// this project's machine, whatever the command. For the languages kubectl
// has no translation for, and for English, the catalog it would load
// ("default" or "en_US") translates every message into itself, which is
// what i18n.T returns with no catalog loaded; those skip it. Any other
// language loads kubectl's catalog as before.
//
// It works by being initialised first: Go initialises, among the packages
// whose imports are ready, the first by import path, and this package
// imports only k8s.io/kubectl/pkg/util/i18n and sorts before every
// k8s.io package, so its init runs before any package that calls i18n.T.
package locale

import (
	"os"
	"strings"

	"k8s.io/kubectl/pkg/util/i18n"
)

func init() {
	if err := i18n.SetLoadTranslationsFunc(func() error {
		if !needsCatalog(os.Getenv) {
			return nil
		}
		return i18n.LoadTranslations("kubectl", nil)
	}); err != nil {
		// Translations were loaded already: nothing is left to save.
		return
	}
}

// needsCatalog reports whether kubectl's catalog for the language the
// environment names (getenv) can translate a message into anything but
// itself. The language is found as kubectl finds it (LC_ALL, then
// LC_MESSAGES, then LANG; "de_DE.UTF-8" names de_DE): unset, without an
// encoding ("C"), or English, its catalog is the identity.
func needsCatalog(getenv func(string) string) bool {
	lang := getenv("LC_ALL")
	if lang == "" {
		lang = getenv("LC_MESSAGES")
	}
	if lang == "" {
		lang = getenv("LANG")
	}
	pieces := strings.Split(lang, ".")
	if len(pieces) != 2 {
		return false // kubectl's "default" catalog
	}
	switch pieces[0] {
	case "C", "POSIX", "default", "en_US":
		return false
	}
	return true
}
