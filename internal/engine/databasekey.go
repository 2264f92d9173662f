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

// postgresKey reads a postgres:// URL or key=value pairs.
func postgresKey(dsn string) databaseKey {
	host, port, user, name := "", "5432", "", ""
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		host, user, name = u.Hostname(), u.User.Username(), strings.TrimPrefix(u.Path, "/")
		if u.Port() != "" {
			port = u.Port()
		}
		if h := u.Query().Get("host"); h != "" {
			host = h
		}
		if d := u.Query().Get("dbname"); d != "" {
			name = d
		}
	} else {
		for _, pair := range strings.Fields(dsn) {
			key, value, _ := strings.Cut(pair, "=")
			value = strings.Trim(value, "'")
			switch key {
			case "host":
				host = value
			case "port":
				port = value
			case "user":
				user = value
			case "dbname":
				name = value
			}
		}
	}
	if strings.Contains(host, ",") {
		return "" // several hosts: compared as written
	}
	if name == "" {
		name = user // PostgreSQL's default database is the user's name
	}
	if host == "" || strings.HasPrefix(host, "/") {
		return databaseKey("postgres|socket:" + host + ":" + port + "|" + name)
	}
	return databaseKey("postgres|" + hostPort(net.JoinHostPort(host, port), port) + "|" + name)
}

// hostPort spells an address with its port, loopback names as one.
func hostPort(address, defaultPort string) string {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		host, port = address, defaultPort
	}
	if host == "localhost" || host == "::1" || strings.HasPrefix(host, "127.") {
		host = "loopback"
	}
	return strings.ToLower(host) + ":" + port
}
