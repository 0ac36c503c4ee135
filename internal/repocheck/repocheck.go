// Package repocheck holds tests over the whole repository (every package has a doc comment that
// says what it holds and may touch). It has no code of its own.
//
// determinism: outside the simulator (runs the go tool over the tree in tests)
package repocheck
