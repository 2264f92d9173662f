package engine

import (
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// databaseKey is the database a DSN names, spelled one way: its server's
// host (loopback names as one) and port, defaults filled in, and its
// database, so that two spellings of one database (parameters, localhost for
// 127.0.0.1, a URL and key=value) are found the same.
type databaseKey string

// databaseKeyOf returns the key of dsn for dialect, or "" when it cannot be
// read (the DSN key still compares it as written).
func databaseKeyOf(dialect, dsn string) databaseKey {
	switch dialect {
	case "mysql":
		return mysqlKey(dsn)
	case "postgres":
		return postgresKey(dsn)
	case "sqlite":
		path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
		if path == "" || path == ":memory:" || strings.Contains(dsn, "mode=memory") {
			return ""
		}
		if abs, err := filepath.Abs(path); err == nil {
			return databaseKey("sqlite|" + abs)
		}
	}
	return ""
}

// mysqlKey reads [user[:password]@][protocol[(address)]]/dbname[?params].
func mysqlKey(dsn string) databaseKey {
	slash := strings.LastIndex(dsn, "/")
	if slash < 0 {
		return ""
	}
	name, _, _ := strings.Cut(dsn[slash+1:], "?")
	server := dsn[:slash]
	if at := strings.LastIndex(server, "@"); at >= 0 {
		server = server[at+1:]
	}
	address := "127.0.0.1:3306"
	if open := strings.Index(server, "("); open >= 0 && strings.HasSuffix(server, ")") {
		if inside := server[open+1 : len(server)-1]; inside != "" {
			address = inside
		}
		if strings.HasPrefix(server, "unix") {
			return databaseKey("mysql|unix:" + address + "|" + name)
		}
	}
	return databaseKey("mysql|" + hostPort(address, "3306") + "|" + name)
}

// postgresKey reads a postgres:// URL or key=value pairs, of which it knows
// the settings that name the server and database and those that do not
// change which database it is; any other (service, hostaddr, options,
// search_path, …) leaves the DSN compared as written.
func postgresKey(dsn string) databaseKey {
	settings := map[string]string{}
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		settings["host"], settings["port"], settings["dbname"] = u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/")
		settings["user"] = u.User.Username()
		for key, values := range u.Query() {
			if settings[key] != "" || len(values) != 1 {
				return "" // a query setting over the URL's own
			}
			settings[key] = values[0]
		}
	} else {
		for _, pair := range strings.Fields(dsn) {
			key, value, ok := strings.Cut(pair, "=")
			if !ok || key == "" || strings.HasPrefix(value, "'") {
				return "" // spaces around =, or a quoted value: not read
			}
			settings[key] = value
		}
	}
	for key := range settings {
		if !postgresNeutral[key] && key != "host" && key != "port" && key != "user" && key != "dbname" {
			return ""
		}
	}
	host, port, name := settings["host"], settings["port"], settings["dbname"]
	if port == "" {
		port = "5432"
	}
	if name == "" {
		name = settings["user"] // PostgreSQL's default database is the user's name
	}
	if host == "" || name == "" || strings.ContainsAny(host, ",/") {
		return "" // a socket, the environment's defaults, or several hosts: compared as written
	}
	return databaseKey("postgres|" + hostPort(net.JoinHostPort(host, port), port) + "|" + name)
}

// postgresNeutral are the settings that do not change which database a
// PostgreSQL DSN names.
var postgresNeutral = map[string]bool{
	"password": true, "sslmode": true, "sslrootcert": true, "sslcert": true, "sslkey": true, "sslpassword": true,
	"connect_timeout": true, "application_name": true, "target_session_attrs": true,
	"statement_cache_capacity": true, "description_cache_capacity": true, "default_query_exec_mode": true,
}

// hostPort spells an address with its port, the names of this machine's
// own loopback address as one.
func hostPort(address, defaultPort string) string {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		host, port = address, defaultPort
	}
	if host == "localhost" || host == "::1" || host == "127.0.0.1" {
		host = "loopback"
	}
	return strings.ToLower(host) + ":" + port
}
