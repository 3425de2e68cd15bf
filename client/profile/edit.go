package profile

import "fmt"

// LoadDefault loads the contexts file at DefaultPath(getenv) and returns it with its path.
func LoadDefault(getenv func(string) string) (*File, string, error) {
	path, err := DefaultPath(getenv)
	if err != nil {
		return nil, "", err
	}
	f, err := Load(path)
	return f, path, err
}

// Edit loads the contexts file at path, applies edit and saves it, and returns the file
// as saved; nothing is written if edit fails (its error then names the path).
func Edit(path string, edit func(*File) error) (*File, error) {
	f, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := edit(f); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	if err := f.Save(path); err != nil {
		return nil, err
	}
	return f, nil
}
