// A session's settings as the PostgreSQL JDBC driver reads them: SHOW TimeZone after SET,
// current_setting of statement_timeout (a startup option), and a transaction's SET LOCAL of
// both, by SHOW, by current_setting in a server-prepared statement, by the TimeZone the server
// reported (getParameterStatus), and after the COMMIT. The zone reported at login is written
// <login> (servers' defaults differ). Prints "case NAME: RESULT" lines.
// usage: java -cp postgresql.jar:. SettingsTx JDBC_URL
import java.sql.*;
import java.util.*;
import org.postgresql.PGConnection;

public class SettingsTx {
    static Connection c;
    static String login;

    static String shown(String v) { return v != null && v.equals(login) ? "<login>" : v; }

    static String one(String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return shown(rs.getString(1));
        }
    }

    static String reported() { return shown(((PGConnection) c).getParameterStatus("TimeZone")); }

    static void exec(String sql) throws SQLException {
        try (Statement st = c.createStatement()) { st.execute(sql); }
    }

    interface Case { List<String> run() throws SQLException; }

    static void report(String name, Case fn) {
        String result;
        try {
            result = fn.run().toString();
        } catch (SQLException e) {
            result = "error " + e.getSQLState();
        }
        System.out.println("case " + name + ": " + result);
    }

    public static void main(String[] args) throws SQLException {
        Properties p = new Properties();
        p.setProperty("options", "-c statement_timeout=1234");
        p.setProperty("prepareThreshold", "1"); // server-prepared from the first run
        c = DriverManager.getConnection(args[0], p);
        login = ((PGConnection) c).getParameterStatus("TimeZone");
        report("after_set", () -> {
            exec("set time zone 'GMT'");
            return List.of(one("show TimeZone"), one("select current_setting('TimeZone')"), reported());
        });
        report("statement_timeout", () -> List.of(one("select current_setting('statement_timeout')"), one("show statement_timeout")));
        report("set_local", () -> {
            List<String> out = new ArrayList<>();
            c.setAutoCommit(false);
            exec("set local time zone 'Zulu'");
            exec("set local statement_timeout = '1500'");
            out.addAll(List.of(one("show timezone"), one("select current_setting('TimeZone')"), reported(),
                one("show statement_timeout"), one("select current_setting('statement_timeout')")));
            c.commit();
            c.setAutoCommit(true);
            out.addAll(List.of(one("show timezone"), reported(), one("select current_setting('statement_timeout')")));
            return out;
        });
        report("reset", () -> {
            exec("reset timezone");
            return List.of(one("show timezone"), reported());
        });
        c.close();
    }
}
