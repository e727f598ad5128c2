package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Write renders dir/index.html, dir/seed-N.html for each failure (named
// MUTANT-seed-N.html for a failure of another mutant), the failure's
// trace under its TraceFile, and dir/seed-N-linearizability.html for each
// failure that violated linearizable-intake and carries a linearizability
// report, and returns the index's path.
//
// The report is written whole into a fresh directory beside dir and then
// renamed into place, replacing an earlier report at dir as a whole: a
// report directory never mixes pages of two runs (a passing run's index
// beside an earlier run's failure pages), and a run that fails midway
// leaves the earlier report as it was. A dir that does not look like a
// report (see CheckDir) is not replaced. dir's parents are created if
// needed.
func Write(dir string, r *Run) (string, error) {
	files, err := Render(r)
	if err != nil {
		return "", err
	}
	if err := CheckDir(dir); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	parent, base := filepath.Dir(abs), filepath.Base(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".new-*")
	if err != nil {
		return "", err
	}
	if err := fill(tmp, files); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := replaceDir(tmp, abs); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return filepath.Join(dir, "index.html"), nil
}

// fill writes the files into the fresh directory tmp, with a report's
// permissions (MkdirTemp makes it private).
func fill(tmp string, files []File) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// replaceDir renames the complete report tmp to dir; an earlier report
// at dir is moved aside first and removed once tmp is in its place (put
// back if that rename fails).
func replaceDir(tmp, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(tmp, dir)
	}
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if back := os.Rename(old, dir); back != nil {
			return fmt.Errorf("%w (and the earlier report could not be put back from %s: %v)", err, old, back)
		}
		return err
	}
	return os.RemoveAll(old)
}

// CheckDir says whether a report can be written at dir, creating nothing:
// dir does not exist and the nearest directory above it that does is
// writable, or dir is an empty directory or an earlier report (see
// looksLikeReport) in a writable directory. Write replaces dir as a
// whole, so a directory of anything else (a typo naming a source tree or
// a home directory) is refused rather than deleted.
func CheckDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	default:
		if err := looksLikeReport(abs); err != nil {
			return fmt.Errorf("%s is not a report explore wrote: %w; a report replaces its directory as a whole, so give a new or empty directory, or an earlier report's", dir, err)
		}
	}
	// The fresh directory is made beside dir, in its nearest existing
	// ancestor once the missing ones are created.
	above := filepath.Dir(abs)
	for {
		st, err := os.Stat(above)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", above)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(above) == above {
			return err
		}
		above = filepath.Dir(above)
	}
	f, err := os.CreateTemp(above, ".explore-write-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// looksLikeReport accepts an empty directory, or one holding only what
// Write writes (regular files named *.html and *.jsonl) with an index
// titled as Write titles it; it says what else dir holds.
func looksLikeReport(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(strings.HasSuffix(name, ".html") || strings.HasSuffix(name, ".jsonl")) {
			return fmt.Errorf("it holds %s, which a report does not", name)
		}
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		return errors.New("it has no index.html")
	}
	if !bytes.Contains(idx, []byte("<title>sluicesim")) {
		return errors.New("its index.html is not a report's")
	}
	return nil
}
