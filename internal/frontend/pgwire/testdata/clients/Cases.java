// Cases for the PostgreSQL JDBC driver through the proxy: one "case NAME: RESULT" line each.
// usage: java -cp postgresql.jar:. Cases JDBC_URL session|transaction TABLE
import java.io.StringReader;
import java.io.StringWriter;
import java.sql.*;
import java.util.Properties;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.copy.CopyManager;

public class Cases {
    interface Case { Object run() throws Exception; }

    static String url, table;
    static Connection conn;

    public static void main(String[] args) throws Exception {
        url = args[0];
        table = args[2];
        conn = DriverManager.getConnection(url);
        try (Statement st = conn.createStatement()) {
            st.execute("create table " + table + " (a int, b text)");
        }
        run("semantics", Cases::semantics);
        run("div_zero", Cases::divZero);
        run("nested_tx", Cases::nestedTx);
        run("rollback", Cases::rollback);
        run("copy_in", Cases::copyIn);
        run("copy_out", Cases::copyOut);
        run("notice", Cases::notice);
        run("fetch_size", Cases::fetchSize);
        run("bytea", Cases::bytea);
        run("prepared", Cases::prepared);
        run("names", Cases::names);
        run("batch", Cases::batch);
        run("notify", Cases::notifyCase);
        run("options", Cases::options);
        run("long_session", Cases::longSession);
        run("edges", Cases::edges);
        run("metadata", Cases::metadata);
        run("activity", Cases::activity);
        run("writers", Cases::writers);
        conn.close();
    }

    // DatabaseMetaData as tools and ORMs read it at start: the type list (its query names
    // pg_type.oid), and the columns of the case table.
    static Object metadata() throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        boolean int4 = false;
        try (ResultSet rs = md.getTypeInfo()) {
            while (rs.next()) int4 |= rs.getString("TYPE_NAME").equals("int4") && rs.getInt("DATA_TYPE") == Types.INTEGER;
        }
        StringBuilder cols = new StringBuilder();
        try (ResultSet rs = md.getColumns(null, null, table, null)) {
            while (rs.next()) cols.append(rs.getString("COLUMN_NAME")).append(' ').append(rs.getString("TYPE_NAME")).append(';');
        }
        return "int4 " + int4 + ", " + cols;
    }

    static void run(String name, Case c) {
        Object result;
        try {
            result = c.run();
        } catch (SQLException e) {
            result = "error " + e.getSQLState();
        } catch (Exception e) {
            result = "error " + e;
        }
        try {
            if (!conn.getAutoCommit()) conn.rollback();
            conn.setAutoCommit(true);
        } catch (SQLException e) {
            result = result + " (reset: " + e.getSQLState() + ")";
        }
        System.out.println("case " + name + ": " + result);
    }

    // PostgreSQL's semantics a client sees on any engine (cases.py's SEMANTICS).
    static Object semantics() throws SQLException {
        try (Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("select (7/2)::text, (-7/2)::text, ('abc' ~ 'b')::text, ('ABC' ~* 'b')::text, "
                 + "('abc' ~ '^b')::text, ('abc' similar to 'a%')::text, ('abc' similar to 'a.c')::text, quote_ident('select'), "
                 + "to_char(1234.5, 'FM9,999.00')")) {
            rs.next();
            StringBuilder out = new StringBuilder();
            for (int i = 1; i <= 9; i++) out.append(i > 1 ? " " : "").append(rs.getString(i));
            return out;
        }
    }

    static Object divZero() throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("select 1/0"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    // Django's nested atomic blocks as cases.py's nested_tx runs them, through JDBC's own
    // savepoints: "ROLLBACK TO's answer, the next statement's, the rows kept".
    static Object nestedTx() throws SQLException {
        String t = table + "_n";
        try (Statement st = conn.createStatement()) {
            st.execute("create table " + t + " (a int)");
            conn.setAutoCommit(false);
            st.execute("insert into " + t + " values (1)");
            Savepoint s1 = conn.setSavepoint("s1");
            st.execute("insert into " + t + " values (2)");
            conn.releaseSavepoint(s1);
            Savepoint s2 = conn.setSavepoint("s2");
            st.execute("insert into " + t + " values (3)");
            StringBuilder out = new StringBuilder();
            boolean failed = false;
            try {
                conn.rollback(s2);
                out.append("ok");
            } catch (SQLException e) {
                out.append("error ").append(e.getSQLState());
                failed = true;
            }
            try (ResultSet rs = st.executeQuery("select 1")) {
                rs.next();
                out.append(' ').append(rs.getInt(1));
            } catch (SQLException e) {
                out.append(" error ").append(e.getSQLState());
                failed = true;
            }
            if (failed) conn.rollback(); else conn.commit();
            try (ResultSet rs = st.executeQuery("select count(*) from " + t)) {
                rs.next();
                out.append(' ').append(rs.getInt(1));
            }
            conn.commit();
            return out;
        }
    }

    static Object rollback() throws Exception {
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            st.execute("insert into " + table + " values (1, 'x')");
            conn.rollback();
            ResultSet rs = st.executeQuery("select count(*) from " + table);
            rs.next();
            return rs.getInt(1);
        }
    }

    static Object copyIn() throws Exception {
        CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
        long n = cm.copyIn("copy " + table + " from stdin", new StringReader("1\ta\n2\tb\n3\t\\N\n"));
        return n;
    }

    static Object copyOut() throws Exception {
        CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
        StringWriter w = new StringWriter();
        cm.copyOut("copy (select a, b from " + table + " order by a) to stdout", w);
        return w.toString().replace("\t", "|").replace("\n", ";");
    }

    static Object notice() throws Exception {
        try (Statement st = conn.createStatement()) {
            st.execute("do $$ begin raise notice 'hello %', 42; end $$");
            SQLWarning w = st.getWarnings();
            return w == null ? "none" : w.getMessage();
        }
    }

    static Object fetchSize() throws Exception {
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            st.setFetchSize(100);
            // More rows than DuckDB streams in one chunk (2048): the statement in between
            // must not end the portal's result there.
            ResultSet rs = st.executeQuery("select x from generate_series(1, 5000) as g(x)");
            long sum = 0;
            int rows = 0;
            while (rs.next()) {
                sum += rs.getLong(1);
                rows++;
                if (rows == 150) { // another statement while the cursor is open
                    try (Statement other = conn.createStatement()) {
                        ResultSet r2 = other.executeQuery("select 1");
                        r2.next();
                    }
                }
            }
            conn.commit();
            return sum;
        }
    }

    static Object bytea() throws Exception {
        try (PreparedStatement ps = conn.prepareStatement("select ?::bytea")) {
            ps.setBytes(1, new byte[] {1, 0, (byte) 255});
            ResultSet rs = ps.executeQuery();
            rs.next();
            StringBuilder sb = new StringBuilder();
            for (byte b : rs.getBytes(1)) sb.append(String.format("%02x", b));
            return sb.toString();
        }
    }

    static Object prepared() throws Exception {
        long total = 0;
        try (PreparedStatement ps = conn.prepareStatement("select ?::int + 1")) {
            for (int i = 0; i < 8; i++) { // past prepareThreshold: a named server-side statement
                ps.setInt(1, i);
                ResultSet rs = ps.executeQuery();
                rs.next();
                total += rs.getInt(1);
            }
        }
        return total;
    }

    // names: result columns as PostgreSQL names them (a prepared statement: described first).
    static Object names() throws Exception {
        try (PreparedStatement ps = conn.prepareStatement("select count(*), 40 + 2, lower('A'), 1::text, max(a) as top from " + table)) {
            ResultSetMetaData md = ps.executeQuery().getMetaData();
            StringBuilder out = new StringBuilder();
            for (int i = 1; i <= md.getColumnCount(); i++) {
                out.append(i > 1 ? " " : "").append(md.getColumnLabel(i));
            }
            return out.toString();
        }
    }

    static Object batch() throws Exception {
        conn.setAutoCommit(false);
        try (PreparedStatement ps = conn.prepareStatement("insert into " + table + " values (?, ?)")) {
            for (int i = 10; i < 13; i++) {
                ps.setInt(1, i);
                ps.setString(2, "batch");
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            conn.commit();
            try (Statement st = conn.createStatement()) {
                ResultSet rs = st.executeQuery("select count(*) from " + table + " where b = 'batch'");
                rs.next();
                return counts.length + " " + rs.getInt(1);
            }
        }
    }

    static Object notifyCase() throws Exception {
        try (Connection listener = DriverManager.getConnection(url)) {
            try (Statement st = listener.createStatement()) {
                st.execute("listen qf_channel");
            }
            try (Connection other = DriverManager.getConnection(url); Statement st = other.createStatement()) {
                st.execute("notify qf_channel, 'ping'");
            }
            PGNotification[] ns = listener.unwrap(PGConnection.class).getNotifications(10000);
            return ns == null || ns.length == 0 ? "none" : ns[0].getParameter();
        }
    }

    static final int SESSION_STEPS = 64;

    // SESSION_STEPS statements in a row on one connection, as cases.py's long_session: text
    // queries (Statement), parameterized ones (PreparedStatement: server-side once past
    // prepareThreshold), errors with more statements after them, NULLs, multi-row results,
    // writes and reads of them. "ok N", or the first step that answered otherwise.
    static Object longSession() throws Exception {
        String t = table + "_s";
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement st = c.createStatement()) {
                st.execute("create table " + t + " (a int, b text)");
            }
            int rows = 0, nulls = 0;
            for (int i = 0; i < SESSION_STEPS; i++) {
                int k = i % 5 + 2, kind = i % 8;
                String sql, want;
                Object[] params = null;
                StringBuilder w = new StringBuilder();
                switch (kind) {
                    case 0: sql = "select " + i + " as n, 'row-" + i + "' as s, null as z"; want = i + "|row-" + i + "|null"; break;
                    case 1: sql = "select ?::int + 1, ?::text, ?::text"; params = new Object[] {i, "p-" + i, null}; want = (i + 1) + "|p-" + i + "|null"; break;
                    case 2:
                        if (i % 16 == 10) { sql = "select * from no_such_table_" + i; want = "error 42P01"; }
                        else { sql = "selec " + i; want = "error 42601"; }
                        break;
                    case 3:
                        sql = "select x, x * x from generate_series(0, " + (k - 1) + ") as g(x) order by x";
                        for (int x = 0; x < k; x++) w.append(x > 0 ? ";" : "").append(x).append("|").append(x * x);
                        want = w.toString();
                        break;
                    case 4: sql = "insert into " + t + " values (" + i + ", 'v-" + i + "')"; want = "1"; break;
                    case 5:
                        sql = "select case when x = ?::int then null else x end from generate_series(0, 3) as g(x) order by g.x";
                        params = new Object[] {i % 4};
                        for (int x = 0; x < 4; x++) w.append(x > 0 ? ";" : "").append(x == i % 4 ? "null" : String.valueOf(x));
                        want = w.toString();
                        break;
                    case 6: sql = "select count(*), count(b) from " + t; want = rows + "|" + (rows - nulls); break;
                    default: sql = "insert into " + t + " values (?::int, ?::text)"; params = new Object[] {1000 + i, null}; want = "1";
                }
                String got;
                try {
                    got = params == null ? text(c, sql) : prepared(c, sql, params);
                } catch (SQLException e) {
                    got = "error " + e.getSQLState();
                }
                if (!got.equals(want)) return "step " + i + " \"" + sql + "\": " + got + ", want " + want;
                if (kind == 4 || kind == 7) rows++;
                if (kind == 7) nulls++;
            }
            return "ok " + SESSION_STEPS;
        }
    }

    static final String EDGE_TEXT = "O'Brien \"q\" C:\\temp\\new \u00fc\u20ac \ud834\udd1e\ud83d\ude00 \u65e5\u672c\u8a9e\nend";
    static final String WIDE = "\u00fc\u20ac\ud834\udd1e\ud83d\ude00\u65e5\u672c\u8a9e";
    static final String[] NULL_TYPES = {"int2", "int4", "int8", "float4", "float8", "numeric", "text", "varchar", "bool",
        "date", "time", "timestamp", "timestamptz", "interval", "bytea", "uuid", "json"};

    // Values at the edges (cases.py's edges): text beyond the BMP with quotes and backslashes
    // both ways, 100 KB out and 200 KB in, a 2 MB result, NULL in every type, 100 parameters with
    // NULLs among them (a PreparedStatement: bound on the server), several statements in one.
    static Object edges() throws Exception {
        StringBuilder out = new StringBuilder();
        try (PreparedStatement ps = conn.prepareStatement("select ?::text, '" + WIDE + "'")) {
            ps.setString(1, EDGE_TEXT);
            ResultSet rs = ps.executeQuery();
            rs.next();
            out.append("uni=").append(EDGE_TEXT.equals(rs.getString(1)) && WIDE.equals(rs.getString(2)) ? 1 : 0);
        }
        try (Statement st = conn.createStatement()) {
            ResultSet rs = st.executeQuery("select repeat('ab', 50000)");
            rs.next();
            String v = rs.getString(1);
            out.append(" out=").append(v.equals("ab".repeat(50000)) ? v.length() : -1);
        }
        try (PreparedStatement ps = conn.prepareStatement("select length(?::text)")) {
            ps.setString(1, "ab".repeat(100000));
            ResultSet rs = ps.executeQuery();
            rs.next();
            out.append(" in=").append(rs.getLong(1));
        }
        try (Statement st = conn.createStatement()) {
            ResultSet rs = st.executeQuery("select x, repeat('y', 100) from generate_series(0, 19999) as g(x) order by x");
            long n = 0, sum = 0;
            while (rs.next()) {
                n++;
                if (rs.getString(2).equals("y".repeat(100))) sum += rs.getLong(1);
            }
            out.append(" rows=").append(n).append(",").append(sum);
            StringBuilder sql = new StringBuilder("select ");
            for (int i = 0; i < NULL_TYPES.length; i++) sql.append(i > 0 ? ", " : "").append("null::").append(NULL_TYPES[i]);
            rs = st.executeQuery(sql.toString());
            rs.next();
            int nulls = 0;
            for (int i = 1; i <= NULL_TYPES.length; i++) if (rs.getObject(i) == null) nulls++;
            out.append(" nulls=").append(nulls);
        }
        StringBuilder sql = new StringBuilder("select ");
        String[] vals = new String[100];
        for (int i = 0; i < vals.length; i++) {
            vals[i] = i % 3 == 0 ? null : "v" + i;
            sql.append(i > 0 ? ", " : "").append("?::text");
        }
        try (PreparedStatement ps = conn.prepareStatement(sql.toString())) {
            for (int i = 0; i < vals.length; i++) ps.setString(i + 1, vals[i]);
            ResultSet rs = ps.executeQuery();
            rs.next();
            boolean same = true;
            for (int i = 0; i < vals.length; i++) same &= java.util.Objects.equals(vals[i], rs.getString(i + 1));
            out.append(" params=").append(same ? vals.length : -1);
        }
        String t = table + "_e";
        try (Statement st = conn.createStatement()) {
            st.execute("create table " + t + " (a int); insert into " + t + " values (1); insert into " + t + " values (2)");
            ResultSet rs = st.executeQuery("select count(*) from " + t);
            rs.next();
            out.append(" multi=").append(rs.getLong(1));
        }
        return out.toString();
    }

    static String text(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement()) {
            return st.execute(sql) ? cells(st.getResultSet()) : String.valueOf(st.getUpdateCount());
        }
    }

    static String prepared(Connection c, String sql, Object[] params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int j = 0; j < params.length; j++) {
                if (params[j] == null) ps.setNull(j + 1, Types.VARCHAR);
                else ps.setObject(j + 1, params[j]);
            }
            return ps.execute() ? cells(ps.getResultSet()) : String.valueOf(ps.getUpdateCount());
        }
    }

    // cells is a result's rows, values joined by | and rows by ;.
    static String cells(ResultSet rs) throws SQLException {
        StringBuilder out = new StringBuilder();
        int n = rs.getMetaData().getColumnCount();
        for (boolean first = true; rs.next(); first = false) {
            if (!first) out.append(";");
            for (int j = 1; j <= n; j++) {
                String v = rs.getString(j);
                out.append(j > 1 ? "|" : "").append(v == null ? "null" : v);
            }
        }
        return out.toString();
    }

    static Object options() throws Exception {
        Properties p = new Properties();
        p.setProperty("options", "-c statement_timeout=1234");
        try (Connection c = DriverManager.getConnection(url, p); Statement st = c.createStatement()) {
            ResultSet rs = st.executeQuery("show statement_timeout");
            rs.next();
            return rs.getString(1);
        }
    }
    // The session's own row of pg_stat_activity (cases.py's ACTIVITY): its pid the one the
    // driver holds (getBackendPID), one row, a backend_start, its state and type.
    static Object activity() throws Exception {
        try (PreparedStatement ps = conn.prepareStatement("select (pg_backend_pid() = ?)::text || ' ' || count(*)::text || ' ' || "
                + "bool_and(backend_start is not null and backend_start <= now())::text || ' ' || min(state) || ' ' || min(backend_type) "
                + "from pg_stat_activity where pid = pg_backend_pid()")) {
            ps.setInt(1, conn.unwrap(PGConnection.class).getBackendPID());
            ResultSet rs = ps.executeQuery();
            rs.next();
            return rs.getString(1);
        }
    }

    // Two clients write one row (cases.py's writers): the second waits for the first's COMMIT
    // and writes on what it committed, "the second's answer and the row after".
    static Object writers() throws Exception {
        String t = table + "_w";
        try (Connection a = DriverManager.getConnection(url); Connection b = DriverManager.getConnection(url);
                Statement sa = a.createStatement(); Statement sb = b.createStatement()) {
            sa.execute("create table " + t + " (id int primary key, n int)");
            sa.execute("insert into " + t + " values (1, 1)");
            a.setAutoCommit(false);
            sa.executeUpdate("update " + t + " set n = n + 1 where id = 1");
            String[] second = {"waiting"};
            Thread th = new Thread(() -> {
                try {
                    second[0] = String.valueOf(sb.executeUpdate("update " + t + " set n = n * 10 where id = 1"));
                } catch (SQLException e) {
                    second[0] = "error " + e.getSQLState();
                }
            });
            th.start();
            Thread.sleep(300);
            sa.executeUpdate("update " + t + " set n = n + 2 where id = 1");
            a.commit();
            th.join(60000);
            a.setAutoCommit(true);
            ResultSet rs = sa.executeQuery("select n from " + t);
            rs.next();
            return second[0] + " " + rs.getInt(1);
        }
    }
}
