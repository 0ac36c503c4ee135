import java.sql.*;
import java.util.*;

/** information_schema through PostgreSQL's JDBC driver, plain and as server-prepared statements
 * (prepareThreshold=1: the extended protocol's named statements): a client's own tables, views,
 * columns and constraints, as PostgreSQL lists them; names qualified with public; then the reset
 * test suites run (DROP SCHEMA public CASCADE, CREATE SCHEMA public). One line per query: its
 * number and rows, or the error's SQLSTATE.
 * usage: java InfoSchema JDBC_URL */
public class InfoSchema {
    static final String[][] QUERIES = {
        {"select table_name, table_type from information_schema.tables where table_schema = ? order by 1", "public"},
        {"select \"table_name\" from \"information_schema\".\"tables\" where \"table_schema\" = ? order by 1", "public"},
        {"select table_name from information_schema.views where table_schema = current_schema()"},
        {"select table_name, column_name, is_nullable from information_schema.columns where table_schema = ? and table_name = ? order by ordinal_position", "public", "entries"},
        {"select table_name, constraint_type from information_schema.table_constraints where table_schema = current_schema() and constraint_type in ('PRIMARY KEY', 'FOREIGN KEY') order by 1, 2"},
        {"select schema_name from information_schema.schemata where schema_name = ?", "public"},
        {"select a.name, count(e.id) from \"public\".accounts a left join public.entries e on e.account = a.id where a.id > ? group by 1", "0"},
        {"select schemaname, tablename from pg_tables where schemaname = ? order by 2", "public"},
    };
    static final String[] RESET = {"drop schema public", "drop schema public cascade", "create schema public"};

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("prepareThreshold", "1");
        try (Connection c = DriverManager.getConnection(args[0], props); Statement s = c.createStatement()) {
            s.execute("create table accounts (id integer primary key, name text not null)");
            s.execute("create table entries (id integer primary key, account integer references accounts(id), amount numeric(12,2))");
            s.execute("create view names as select name from accounts");
            s.execute("insert into public.accounts values (1, 'a')");
            for (int round = 0; round < 2; round++) { // the second round runs the server-prepared statements
                for (int i = 0; i < QUERIES.length; i++) {
                    try (PreparedStatement p = c.prepareStatement(QUERIES[i][0])) {
                        for (int k = 1; k < QUERIES[i].length; k++) {
                            if (QUERIES[i][k].matches("[0-9]+")) p.setInt(k, Integer.parseInt(QUERIES[i][k]));
                            else p.setString(k, QUERIES[i][k]);
                        }
                        StringBuilder out = new StringBuilder();
                        try (ResultSet r = p.executeQuery()) {
                            int n = r.getMetaData().getColumnCount();
                            while (r.next()) {
                                out.append('(');
                                for (int k = 1; k <= n; k++) out.append(k > 1 ? "," : "").append(r.getString(k));
                                out.append(')');
                            }
                        }
                        System.out.println(round + " " + i + ": " + out);
                    } catch (SQLException e) {
                        System.out.println(round + " " + i + ": error " + e.getSQLState());
                    }
                }
            }
            for (String r : RESET) {
                try {
                    s.execute(r);
                    System.out.println(r + ": ok");
                } catch (SQLException e) {
                    System.out.println(r + ": error " + e.getSQLState());
                }
            }
            try (ResultSet r = s.executeQuery("select count(*) from information_schema.tables where table_schema = 'public'")) {
                r.next();
                System.out.println("left in public: " + r.getLong(1));
            }
        }
    }
}
