// Package jsonpointer escapes and unescapes the reference tokens of RFC
// 6901 JSON pointers, the one spelling of a key in a patch path or a
// configured path that every rule shares.
package jsonpointer

import "strings"

// Escape makes a key a reference token: "~" is written "~0" and "/" is
// written "~1", in that order, so that "~1" in a key stays two characters.
// A key with neither is returned as it is, without allocating.
func Escape(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// Unescape undoes Escape: "~1" first, then "~0", so that "~01" becomes
// "~1" and not "/". It does not check the token; a "~" followed by
// anything but "0" or "1" is left as it is.
func Unescape(token string) string {
	if !strings.Contains(token, "~") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}
