// Package backends is the registry of shaper backends: each backend
// registers itself by name in a file of this package (htb.go), and Open
// and Plan dispatch by the name a policy or the caller gives, so the CLI,
// the watch engine and the lab never name one. Adding a backend means
// adding one such file.
//
// It may import the model and every backend package; nothing outside it
// (but tests) imports a backend package.
package backends
