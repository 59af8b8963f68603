//go:build darwin

package oauth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Claude Code on macOS keeps its login in the login keychain, as a generic
// password named by claudeKeychainService (read in Claude Code 2.1.337's
// bundle; see claudeStorage).
const securityTool = "/usr/bin/security"

// keychainTimeout bounds one call of the security tool. It is long
// because macOS may ask the user whether subpool may read the item.
const keychainTimeout = 2 * time.Minute

func detectClaudeKeychain(hashOf string) (string, bool) {
	svc := claudeKeychainService(hashOf)
	if _, err := readKeychain(svc); err != nil {
		return "", false
	}
	return svc, true
}

func security(stdin []byte, args ...string) ([]byte, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), keychainTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, securityTool, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	return out.Bytes(), errb.Bytes(), err
}

// readKeychain returns the item's password. The security tool prints a
// password with non-printing bytes as hex; that is decoded.
func readKeychain(service string) ([]byte, error) {
	out, errb, err := security(nil, "find-generic-password", "-s", service, "-w")
	if err != nil {
		if bytes.Contains(errb, []byte("could not be found")) {
			return nil, fmt.Errorf("%w: no keychain item %q", ErrNoLogin, service)
		}
		return nil, fmt.Errorf("cannot read the keychain item %q: %s", service, firstLine(errb, err))
	}
	v := bytes.TrimRight(out, "\n")
	if len(v) > 0 && v[0] != '{' {
		if d, err := hex.DecodeString(string(v)); err == nil {
			v = d
		}
	}
	return v, nil
}

// writeKeychain replaces the item's password, keeping its account (and so
// the item Claude Code reads). keychainWriteCmd picks stdin or arguments
// the way Claude Code does.
func writeKeychain(service string, data []byte) error {
	acct, err := keychainAccount(service)
	if err != nil {
		return err
	}
	stdin, args := keychainWriteCmd(acct, service, data)
	_, errb, err := security(stdin, args...)
	if err != nil || (stdin != nil && len(bytes.TrimSpace(errb)) > 0) {
		return fmt.Errorf("cannot update the keychain item %q: %s", service, firstLine(errb, err))
	}
	return nil
}

// keychainAccount reads the item's account attribute ("acct"<blob>="…").
func keychainAccount(service string) (string, error) {
	out, errb, err := security(nil, "find-generic-password", "-s", service)
	if err != nil {
		return "", fmt.Errorf("cannot read the keychain item %q: %s", service, firstLine(errb, err))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		v, ok := strings.CutPrefix(l, `"acct"<blob>=`)
		if !ok {
			continue
		}
		if s, err := strconv.Unquote(v); err == nil {
			return s, nil
		}
		if h, ok := strings.CutPrefix(v, "0x"); ok {
			if b, err := hex.DecodeString(strings.Fields(h)[0]); err == nil {
				return string(b), nil
			}
		}
	}
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	return "", errors.New("cannot tell the account of the Claude Code keychain item")
}

func firstLine(errb []byte, err error) string {
	s := strings.TrimSpace(string(errb))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" && err != nil {
		s = err.Error()
	}
	return s
}
