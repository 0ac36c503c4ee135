package determinism

// forbidden lists package-level names that role code must not touch, by import path, and why.
var forbidden = map[string]map[string]string{
	"time": {
		"Now": "use env.Now", "Since": "use env.Now().Sub", "Until": "use t.Sub(env.Now())",
		"Sleep": "use env.Sleep", "After": "use env.Sleep", "Tick": "use env.Every",
		"NewTimer": "use env.Sleep", "NewTicker": "use env.Every", "AfterFunc": "use env.Go + env.Sleep",
		"Local":        "the machine's time zone; use UTC",
		"LoadLocation": "reads the machine's zone database; use UTC or a fixed offset",
	},
	"context": {
		"WithTimeout": "use env.WithTimeout", "WithDeadline": "use env.WithTimeout",
		"WithCancel": "use env.WithCancel", "WithCancelCause": "use env.WithCancel",
		"WithTimeoutCause": "use env.WithTimeout", "WithDeadlineCause": "use env.WithTimeout",
		"AfterFunc": "starts a goroutine; use env.Go",
	},
	"runtime": {
		"Gosched":      "yields to the Go scheduler, which the simulator does not control; wait with Signal.Wait",
		"NumGoroutine": "counts goroutines the simulator pools and reuses; count tasks yourself",
		"SetFinalizer": "runs when the garbage collector decides; close explicitly",
		"AddCleanup":   "runs when the garbage collector decides; close explicitly",
		"NumCPU":       "differs per machine; size from config",
		"GOMAXPROCS":   "differs per machine and run; size from config",
	},
	"os": {
		"Getpid":  "differs per process (a seed from it differs per run); use env.Rand",
		"Getppid": "differs per process; use env.Rand",
	},
	"sync": {"Pool": "keeps or drops objects when the garbage collector decides; allocate, or keep a free list"},
	"net": {
		"Dial": netUse, "DialTimeout": netUse, "DialTCP": netUse, "DialUDP": netUse, "DialIP": netUse, "DialUnix": netUse,
		"Listen": netUse, "ListenTCP": netUse, "ListenUDP": netUse, "ListenIP": netUse, "ListenUnix": netUse,
		"ListenUnixgram": netUse, "ListenPacket": netUse, "ListenMulticastUDP": netUse, "FileConn": netUse,
		"FileListener": netUse, "FilePacketConn": netUse, "Pipe": "blocks goroutines the simulator does not schedule",
		"LookupHost": dnsUse, "LookupIP": dnsUse, "LookupAddr": dnsUse, "LookupCNAME": dnsUse, "LookupMX": dnsUse,
		"LookupNS": dnsUse, "LookupPort": dnsUse, "LookupSRV": dnsUse, "LookupTXT": dnsUse, "DefaultResolver": dnsUse,
		"ResolveTCPAddr": dnsUse, "ResolveUDPAddr": dnsUse, "ResolveIPAddr": dnsUse, "ResolveUnixAddr": dnsUse,
		"Interfaces": "the machine's interfaces", "InterfaceAddrs": "the machine's interfaces",
		"InterfaceByIndex": "the machine's interfaces", "InterfaceByName": "the machine's interfaces",
	},
	"net/http": {
		"DefaultClient":        "real network and timers; use the http.Client you were given",
		"DefaultTransport":     "real network and timers; use the RoundTripper you were given",
		"Get":                  "uses http.DefaultClient; use the http.Client you were given",
		"Head":                 "uses http.DefaultClient; use the http.Client you were given",
		"Post":                 "uses http.DefaultClient; use the http.Client you were given",
		"PostForm":             "uses http.DefaultClient; use the http.Client you were given",
		"ListenAndServe":       netUse,
		"ListenAndServeTLS":    netUse,
		"Serve":                netUse,
		"ServeTLS":             netUse,
		"ServeFile":            fileUse,
		"ServeFileFS":          fileUse,
		"FileServer":           fileUse,
		"Dir":                  fileUse,
		"NewFileTransport":     fileUse,
		"TimeoutHandler":       "starts real timers and goroutines; take deadlines from env.WithTimeout",
		"ProxyFromEnvironment": "reads the process environment",
	},
	"path/filepath": {
		"Abs": fileUse, "EvalSymlinks": fileUse, "Glob": fileUse, "Walk": fileUse, "WalkDir": fileUse,
	},
	"io/ioutil": {
		"ReadFile": fileUse, "WriteFile": fileUse, "ReadDir": fileUse, "TempDir": fileUse, "TempFile": fileUse,
	},
	"flag": {
		"Parse": argsUse, "Parsed": argsUse, "Args": argsUse, "Arg": argsUse, "NArg": argsUse, "CommandLine": argsUse,
	},
	"crypto/tls": {
		"Dial": netUse, "DialWithDialer": netUse, "Listen": netUse, "NewListener": netUse,
		"Client": randomUse, "Server": randomUse,
	},
	"crypto/ecdsa":   {"GenerateKey": randomUse, "Sign": randomUse, "SignASN1": randomUse},
	"crypto/ed25519": {"GenerateKey": randomUse},
	"crypto/rsa": {
		"GenerateKey": randomUse, "GenerateMultiPrimeKey": randomUse, "EncryptOAEP": randomUse,
		"EncryptPKCS1v15": randomUse, "SignPSS": randomUse,
	},
	"crypto/cipher":              {"NewGCMWithRandomNonce": randomUse},
	"golang.org/x/crypto/bcrypt": {"GenerateFromPassword": "salts from crypto/rand; take the salt from env.Rand"},
	"github.com/prometheus/client_golang/prometheus": {
		"NewGoCollector":      "reports the Go runtime's state",
		"NewProcessCollector": "reports the process's state",
	},
}

// wholePackages are packages every name of which is forbidden (after what forbidden says of a
// name), except what allowed lists.
var wholePackages = map[string]string{
	"crypto/rand":   "use env.Rand",
	"math/rand":     "use env.Rand",
	"math/rand/v2":  "use env.Rand",
	"os":            "the process, its environment and its files differ per run; take them from what you were given",
	"runtime":       "the Go runtime's state differs per run",
	"runtime/debug": "the Go runtime's state differs per run",
}

// allowed lists the harmless names of wholePackages: errors, types and pure functions (for
// math/rand, the seeded generators: deterministic when seeded from env.Rand).
var allowed = map[string]map[string]bool{
	"os": set("ErrNotExist", "ErrExist", "ErrPermission", "ErrClosed", "ErrInvalid", "ErrDeadlineExceeded",
		"ErrNoDeadline", "ErrProcessDone", "IsNotExist", "IsExist", "IsPermission", "IsTimeout", "PathError",
		"LinkError", "SyscallError", "FileMode", "FileInfo", "DirEntry", "PathSeparator", "PathListSeparator",
		"ModeDir", "ModePerm", "ModeType", "ModeSymlink", "ModeNamedPipe", "ModeSocket", "ModeDevice",
		"ModeCharDevice", "ModeIrregular", "ModeAppend", "ModeExclusive", "ModeTemporary", "ModeSetuid",
		"ModeSetgid", "ModeSticky", "O_RDONLY", "O_WRONLY", "O_RDWR", "O_APPEND", "O_CREATE", "O_EXCL",
		"O_SYNC", "O_TRUNC", "Signal", "File"),
	"runtime": set("KeepAlive", "Caller", "Callers", "CallersFrames", "FuncForPC", "Frame", "Frames", "Func",
		"GOOS", "GOARCH", "Compiler", "Error", "TypeAssertionError", "Version", "MemStats"),
	"runtime/debug": set("ReadBuildInfo", "ParseBuildInfo", "BuildInfo", "BuildSetting", "Module"),
	"math/rand":     set("New", "NewSource", "NewZipf", "Rand", "Source", "Source64", "Zipf"),
	"math/rand/v2":  set("New", "NewPCG", "NewChaCha8", "NewZipf", "Rand", "Source", "PCG", "ChaCha8", "Zipf"),
}

// forbiddenMethods are methods role code must not call, by the receiver's package path and type
// name and the method name.
var forbiddenMethods = map[string]string{
	"reflect.Value.MapKeys":                         "map order changes behaviour; sort the keys",
	"reflect.Value.MapRange":                        "map order changes behaviour; sort the keys",
	"reflect.Value.Seq":                             "a map's order changes behaviour; sort the keys",
	"reflect.Value.Seq2":                            "a map's order changes behaviour; sort the keys",
	"reflect.Value.Pointer":                         addressUse,
	"reflect.Value.UnsafeAddr":                      addressUse,
	"reflect.Value.UnsafePointer":                   addressUse,
	"reflect.Value.Recv":                            "a channel receive; wait with Signal.Wait",
	"reflect.Value.Send":                            "a channel send blocks goroutines the simulator does not schedule",
	"sync.Map.Range":                                "map order changes behaviour; keep a sorted index",
	"sync.WaitGroup.Go":                             "starts a goroutine; start tasks with env.Go",
	"sync.WaitGroup.Wait":                           "blocks on goroutines the simulator does not schedule; wait with Signal.Wait",
	"sync.Cond.Wait":                                "blocks on goroutines the simulator does not schedule; wait with Signal.Wait",
	"time.Time.Local":                               "the machine's time zone; use UTC",
	"net.Dialer.Dial":                               netUse,
	"net.Dialer.DialContext":                        netUse,
	"net.ListenConfig.Listen":                       netUse,
	"net.ListenConfig.ListenPacket":                 netUse,
	"net.Resolver.LookupHost":                       dnsUse,
	"net.Resolver.LookupIPAddr":                     dnsUse,
	"net.Resolver.LookupIP":                         dnsUse,
	"net.Resolver.LookupNetIP":                      dnsUse,
	"net/http.Server.ListenAndServe":                netUse,
	"net/http.Server.ListenAndServeTLS":             netUse,
	"net/http.Server.Serve":                         netUse,
	"net/http.Server.ServeTLS":                      netUse,
	"net/http.Server.Shutdown":                      "polls with real timers",
	"github.com/spf13/cobra.Command.Execute":        argsUse,
	"github.com/spf13/cobra.Command.ExecuteC":       argsUse,
	"github.com/spf13/cobra.Command.ExecuteContext": argsUse,
}

// bannedImports are packages whose every use depends on the process, the machine, the garbage
// collector or the Go scheduler.
var bannedImports = map[string]string{
	"hash/maphash":               "seeds are random per process; use a fixed hash (xxhash, fnv)",
	"weak":                       "weak pointers clear when the garbage collector decides",
	"unique":                     "handles live as long as the garbage collector decides",
	"golang.org/x/sync/errgroup": "starts goroutines; start tasks with env.Go",
	"os/exec":                    "runs processes",
	"os/signal":                  "process signals",
	"os/user":                    "the machine's users",
	"syscall":                    "the operating system",
	"golang.org/x/sys/unix":      "the operating system",
	"plugin":                     "loads code at run time",
	"runtime/pprof":              "profiles the process",
	"runtime/trace":              "traces the process",
	"net/http/pprof":             "profiles the process",
	"expvar":                     "publishes the process's state",
	"log/syslog":                 "the machine's syslog",
	"encoding/gob":               "encodes maps in their random order",
	"C":                          "cgo runs code the scanner cannot read",
	"go.starlark.net/lib/time":   "starlark's time.now reads the wall clock",
	"github.com/prometheus/client_golang/prometheus/collectors": "reports the process's and the runtime's state",
}

// reviewedModules are the third-party packages role code may import: read and found to touch
// nothing but their arguments (or only what forbidden lists for them). Any other third-party
// import is a finding: review it and add it here, or inject it through the Env.
var reviewedModules = map[string]string{
	"github.com/apache/arrow-go/v18/arrow":                    "Arrow types and schemas",
	"github.com/apache/arrow-go/v18/arrow/array":              "Arrow arrays and builders over a given allocator",
	"github.com/apache/arrow-go/v18/arrow/decimal128":         "decimal arithmetic",
	"github.com/apache/arrow-go/v18/arrow/decimal256":         "decimal arithmetic",
	"github.com/apache/arrow-go/v18/arrow/ipc":                "Arrow IPC encoding to a given writer",
	"github.com/apache/arrow-go/v18/arrow/memory":             "the Go allocator",
	"github.com/cespare/xxhash/v2":                            "a fixed hash",
	"github.com/goccy/go-yaml":                                "YAML decoding of given bytes",
	"github.com/goccy/go-yaml/ast":                            "YAML syntax trees",
	"github.com/goccy/go-yaml/parser":                         "YAML parsing of given bytes",
	"github.com/jackc/pgx/v5/pgtype":                          "PostgreSQL type codecs",
	"github.com/prometheus/client_golang/prometheus":          "metrics the roles only write (the collectors of the process are forbidden)",
	"github.com/prometheus/client_golang/prometheus/promhttp": "serves a given registry",
	"github.com/spf13/cobra":                                  "command-line flags (Execute, which reads os.Args, is forbidden)",
	"go.starlark.net/starlark":                                "a deterministic interpreter (dicts keep insertion order)",
	"go.starlark.net/syntax":                                  "Starlark parsing",
	"golang.org/x/crypto/bcrypt":                              "password hashes (GenerateFromPassword, which salts from crypto/rand, is forbidden)",
}

const (
	netUse     = "the real network; use the http.Client or RoundTripper you were given"
	dnsUse     = "asks the machine's resolver; names are resolved by the transport you were given"
	fileUse    = "the file system; take the bytes from the config source you were given"
	argsUse    = "the process's command line; take values from the config you were given"
	randomUse  = "reads crypto/rand; use env.Rand"
	addressUse = "an address, which differs per run; use an id"
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
