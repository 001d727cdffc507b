// Command argocd-health runs Argo CD resource health checks (health.lua) with gopher-lua, the Lua
// engine Argo CD embeds, the way Argo CD's util/lua runs them: the object decoded from JSON into
// Lua tables as the global `obj` (util/lua/lua.go decodeValue), only the libraries Argo CD opens
// for a health customization of argocd-cm (package, base, table and a safe os with time and date;
// no string or math unless resource.customizations.useOpenLibs is set), a one-second limit, and
// the returned table read as Argo CD reads it (util/lua/lua.go ExecuteHealthLua).
//
//	argocd-health test DIR...          every case of every health_test.yaml under DIR (Argo CD's
//	                                   resource_customizations layout); prints PASS/FAIL per case
//	                                   and "N passed, M failed"; exit 1 when one fails
//	argocd-health eval HEALTH_LUA      one object (YAML or JSON) on stdin; prints the health as JSON
//
// -open-libs opens every standard library, as a customization with useOpenLibs (and Argo CD's own
// test runner, util/lua/health_test.go) does.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

// Health is what Argo CD keeps of a health script's result (gitops-engine's health.HealthStatus).
type Health struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// The health codes Argo CD accepts (util/lua/lua.go isValidHealthStatusCode).
var validStatus = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true,
	"Suspended": true, "Missing": true, "Unknown": true,
}

const invalidHealthStatus = "Lua returned an invalid health status"

// decodeValue is Argo CD's conversion of a decoded JSON object into Lua values: numbers become
// Lua numbers, arrays tables with indices 1..n, objects tables with string keys, null nil (so an
// empty array and an empty object are both an empty table, and a null field is absent).
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case json.Number:
		return lua.LString(v)
	case string:
		return lua.LString(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(decodeValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}

// openLibs opens what Argo CD opens when a customization does not ask for the open libraries.
func openLibs(l *lua.LState, all bool) error {
	if all {
		l.OpenLibs()
	} else {
		for _, lib := range []struct {
			name string
			open lua.LGFunction
		}{
			{lua.LoadLibName, lua.OpenPackage},
			{lua.BaseLibName, lua.OpenBase},
			{lua.TabLibName, lua.OpenTable},
			{lua.OsLibName, lua.OpenOs},
		} {
			err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name))
			if err != nil {
				return err
			}
		}
	}
	// Argo CD's os is its "safe" copy of gopher-lua's: time and date only (util/lua/oslib_safe.go).
	if osTable, ok := l.GetGlobal(lua.OsLibName).(*lua.LTable); ok {
		var drop []lua.LValue
		osTable.ForEach(func(k, _ lua.LValue) {
			if name := k.String(); name != "time" && name != "date" {
				drop = append(drop, k)
			}
		})
		for _, k := range drop {
			osTable.RawSet(k, lua.LNil)
		}
	}
	return nil
}

// Evaluate runs one health script on one object as Argo CD's application controller does.
func Evaluate(script string, obj map[string]any, allLibs bool) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	if err := openLibs(l, allLibs); err != nil {
		return Health{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", decodeValue(l, obj))
	if err := l.DoString(script); err != nil {
		var apiErr *lua.ApiError
		if errors.As(err, &apiErr) {
			apiErr.StackTrace = ""
		}
		return Health{}, err
	}
	switch ret := l.Get(-1).(type) {
	case *lua.LTable:
		return readHealth(ret), nil
	case *lua.LNilType:
		return Health{}, nil
	default:
		return Health{}, fmt.Errorf("expect table output from Lua script, not %s", ret.Type())
	}
}

// readHealth reads the returned table as Argo CD does (JSON-encoded, then decoded into
// HealthStatus): a field of another type than string, or an empty table (encoded as []), gives an
// empty health; a status outside the accepted codes gives Unknown.
func readHealth(t *lua.LTable) Health {
	var h Health
	for _, field := range []struct {
		key string
		dst *string
	}{{"status", &h.Status}, {"message", &h.Message}} {
		switch v := t.RawGetString(field.key).(type) {
		case lua.LString:
			*field.dst = string(v)
		case *lua.LNilType:
		default:
			return Health{}
		}
	}
	if !validStatus[h.Status] {
		return Health{Status: "Unknown", Message: invalidHealthStatus}
	}
	return h
}

// readObject decodes YAML or JSON as Argo CD's test runner does (sigs.k8s.io/yaml into a map).
func readObject(data []byte) (map[string]any, error) {
	obj := map[string]any{}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

type testFile struct {
	Tests []struct {
		InputPath    string `json:"inputPath"`
		HealthStatus Health `json:"healthStatus"`
	} `json:"tests"`
}

// runTests runs every case of every health_test.yaml beside a health.lua under the roots.
func runTests(out io.Writer, roots []string, allLibs bool) (passed, failed int, err error) {
	var scripts []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "health.lua" {
				scripts = append(scripts, path)
			}
			return err
		})
		if err != nil {
			return 0, 0, err
		}
	}
	sort.Strings(scripts)
	if len(scripts) == 0 {
		return 0, 0, fmt.Errorf("no health.lua under %v", roots)
	}
	for _, path := range scripts {
		dir := filepath.Dir(path)
		script, err := os.ReadFile(path)
		if err != nil {
			return passed, failed, err
		}
		raw, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
		if err != nil {
			return passed, failed, err
		}
		var tests testFile
		if err := yaml.UnmarshalStrict(raw, &tests); err != nil {
			return passed, failed, fmt.Errorf("%s: %w", filepath.Join(dir, "health_test.yaml"), err)
		}
		if len(tests.Tests) == 0 {
			return passed, failed, fmt.Errorf("%s has no tests", filepath.Join(dir, "health_test.yaml"))
		}
		for _, tc := range tests.Tests {
			name := filepath.Join(dir, tc.InputPath)
			data, err := os.ReadFile(name)
			if err != nil {
				return passed, failed, err
			}
			obj, err := readObject(data)
			if err != nil {
				return passed, failed, fmt.Errorf("%s: %w", name, err)
			}
			got, err := Evaluate(string(script), obj, allLibs)
			switch {
			case err != nil:
				failed++
				fmt.Fprintf(out, "FAIL %s: %v\n", name, err)
			case got != tc.HealthStatus:
				failed++
				fmt.Fprintf(out, "FAIL %s: want %s, got %s\n", name, show(tc.HealthStatus), show(got))
			default:
				passed++
				fmt.Fprintf(out, "PASS %s: %s\n", name, show(got))
			}
		}
	}
	return passed, failed, nil
}

func show(h Health) string {
	b, _ := json.Marshal(h)
	return string(b)
}

func main() {
	allLibs := flag.Bool("open-libs", false, "open every standard library (a customization with useOpenLibs)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: argocd-health [-open-libs] test DIR... | eval HEALTH_LUA < object")
	}
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 {
		flag.Usage()
		os.Exit(2)
	}
	switch args[0] {
	case "test":
		passed, failed, err := runTests(os.Stdout, args[1:], *allLibs)
		fmt.Printf("%d passed, %d failed\n", passed, failed)
		if err != nil {
			fmt.Fprintln(os.Stderr, "argocd-health:", err)
			os.Exit(2)
		}
		if failed > 0 {
			os.Exit(1)
		}
	case "eval":
		script, err := os.ReadFile(args[1])
		if err == nil {
			var data []byte
			if data, err = io.ReadAll(os.Stdin); err == nil {
				var obj map[string]any
				if obj, err = readObject(data); err == nil {
					var h Health
					if h, err = Evaluate(string(script), obj, *allLibs); err == nil {
						fmt.Println(show(h))
						return
					}
				}
			}
		}
		fmt.Fprintln(os.Stderr, "argocd-health:", err)
		os.Exit(1)
	default:
		flag.Usage()
		os.Exit(2)
	}
}
