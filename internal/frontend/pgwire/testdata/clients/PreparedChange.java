// A PreparedStatement of the PostgreSQL JDBC driver kept across a change of what it reads: run
// as a named statement on the server from its first use (prepareThreshold=1), its result
// columns kept by the driver, then run again after an ALTER of its table (a column added,
// dropped, retyped, renamed), after its table dropped and made again, and after getMetaData (Parse and
// Describe alone) with a DDL before its first run. One "case NAME: RESULT" line each, for a
// test that runs this on PostgreSQL and through the proxy and compares.
// usage: java -cp postgresql.jar:. PreparedChange JDBC_URL TABLE
import java.sql.*;

public class PreparedChange {
    static Connection conn;

    public static void main(String[] args) throws Exception {
        String url = args[0] + (args[0].contains("?") ? "&" : "?") + "prepareThreshold=1";
        String t = args[1];
        conn = DriverManager.getConnection(url);
        exec("drop table if exists " + t);
        exec("create table " + t + " (a int, s text)");
        exec("insert into " + t + " values (1, 'x'), (2, 'y')");
        try (PreparedStatement star = conn.prepareStatement("select * from " + t + " where a = ?")) {
            System.out.println("case star: " + rows(star, 1) + " | " + rows(star, 2));
            exec("alter table " + t + " add column b int default 7");
            System.out.println("case star_added: " + rows(star, 1) + " | " + rows(star, 2) + " | " + rows(star, 1));
            exec("alter table " + t + " drop column s");
            System.out.println("case star_dropped: " + rows(star, 1) + " | " + rows(star, 2));
            exec("alter table " + t + " alter column b type text");
            System.out.println("case star_retyped: " + rows(star, 1) + " | " + rows(star, 2));
            exec("alter table " + t + " rename column b to c");
            System.out.println("case star_renamed: " + rows(star, 1) + " | " + rows(star, 2));
        }
        String kept = t + "_kept";
        exec("drop table if exists " + kept);
        exec("create table " + kept + " (v text)");
        exec("insert into " + kept + " values ('first')");
        try (PreparedStatement read = conn.prepareStatement("select v from " + kept + " where length(v) > ?")) {
            System.out.println("case remade: " + rows(read, 0));
            exec("drop table " + kept);
            exec("create table " + kept + " (v text, w int default 3)");
            exec("insert into " + kept + " (v) values ('second')");
            System.out.println("case remade_again: " + rows(read, 0) + " | " + rows(read, 1));
        }
        // Described before it ever runs: the DDL between the Describe and the first Execute.
        try (PreparedStatement desc = conn.prepareStatement("select * from " + kept + " where w > ?")) {
            ResultSetMetaData md = desc.getMetaData();
            System.out.println("case described: " + (md == null ? "null" : md.getColumnCount()));
            exec("alter table " + kept + " add column x int default 5");
            System.out.println("case described_run: " + rows(desc, 0) + " | " + rows(desc, 0));
        }
        exec("drop table " + kept);
        exec("drop table " + t);
        conn.close();
    }

    static void exec(String sql) throws SQLException {
        try (Statement s = conn.createStatement()) {
            s.execute(sql);
        }
    }

    static String rows(PreparedStatement ps, int arg) {
        try {
            ps.setInt(1, arg);
            try (ResultSet rs = ps.executeQuery()) {
                ResultSetMetaData md = rs.getMetaData();
                StringBuilder sb = new StringBuilder();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    sb.append(i > 1 ? "," : "").append(md.getColumnName(i));
                }
                sb.append(":");
                while (rs.next()) {
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        sb.append(i > 1 ? "," : "").append(rs.getString(i));
                    }
                    sb.append(";");
                }
                return sb.toString();
            }
        } catch (SQLException e) {
            return "error " + e.getSQLState();
        }
    }
}
