// Package docs holds Steward's documentation pages (the Markdown files in
// this directory) and the test that keeps the links between them, and from
// README.md into them, working.
package docs
