package profile

import "errors"

// Errors of the package; each is wrapped with the details.
var (
	// ErrUnknownContext: no context of that name in the file.
	ErrUnknownContext = errors.New("unknown context")
	// ErrBadName: a context name that is empty, too long or not [A-Za-z0-9._-].
	ErrBadName = errors.New("bad context name")
	// ErrBadFile: the contexts file is not valid YAML of the expected shape.
	ErrBadFile = errors.New("bad contexts file")
	// ErrConflict: one layer gives both a certificates directory and insecure.
	ErrConflict = errors.New("conflicting settings")
	// ErrBadSettings: an empty address or a negative timeout.
	ErrBadSettings = errors.New("bad settings")
	// ErrNoHome: no environment variable says where the contexts file is.
	ErrNoHome = errors.New("no home directory")
)
