package sqlscan

import (
	"maps"
	"regexp"
	"testing"
)

var gormStatements = [][2]string{
	{"mysql", "SELECT * FROM `books` WHERE `books`.`author_id` IN (?,?)"}, // Preload
	{"postgres", `SELECT * FROM "books" WHERE "books"."author_id" IN ($1,$2)`},
	{"sqlite", "SELECT * FROM `books` WHERE `books`.`author_id` IN (?,?)"},
	{"mysql", "SELECT `books`.`id`,`books`.`author_id`,`books`.`title`,`books`.`price`,`Author`.`id` AS `Author__id`,`Author`.`name` AS `Author__name` FROM `books` LEFT JOIN `authors` `Author` ON `books`.`author_id` = `Author`.`id` WHERE books.price > ? ORDER BY books.id desc LIMIT ? OFFSET ?"},
	{"mysql", "SELECT * FROM `authors`"},
	{"mysql", "SELECT `books`.`id`,`books`.`author_id`,`books`.`title`,`books`.`price` FROM `books` JOIN authors a2 ON a2.id = books.author_id WHERE a2.name = ?"},
	{"mysql", "SELECT count(*) FROM `books` WHERE price > ?"},
	{"mysql", "SELECT author_id, count(*) as c FROM `books` GROUP BY `author_id` HAVING count(*) > ?"},
	{"mysql", "SELECT * FROM `books` WHERE author_id IN (SELECT id FROM `authors` WHERE name = ?)"},
	{"mysql", "SELECT * FROM (SELECT `author_id` FROM `books`) as sub"},
	{"mysql", "INSERT INTO `books` (`author_id`,`title`,`price`,`id`) VALUES (?,?,?,?) ON DUPLICATE KEY UPDATE `title`=VALUES(`title`),`price`=VALUES(`price`)"},
	{"mysql", "INSERT INTO `books` (`author_id`,`title`,`price`,`id`) VALUES (?,?,?,?),(?,?,?,?) ON DUPLICATE KEY UPDATE `author_id`=VALUES(`author_id`),`title`=VALUES(`title`),`price`=VALUES(`price`)"},
	{"mysql", "INSERT INTO `books` (`author_id`,`title`,`price`,`id`) VALUES (?,?,?,?) ON DUPLICATE KEY UPDATE `id`=`id`"},
	{"mysql", "UPDATE `books` SET `price`=price + ?,`title`=? WHERE `id` = ?"},
	{"mysql", "UPDATE `books` SET `price`=(SELECT max(price) FROM books b2) WHERE id = ?"},
	{"mysql", "DELETE FROM `books` WHERE price < ?"},
	{"mysql", "SELECT * FROM `books` WHERE id = ? FOR UPDATE SKIP LOCKED"},
	{"mysql", "SELECT * FROM `books` FOR SHARE OF `books`"},
	{"mysql", "SELECT * FROM `books` OFFSET ?"},
	{"mysql", "SELECT * FROM `books` ORDER BY title LIMIT ? OFFSET ?"},
	{"mysql", "SELECT * FROM `books` WHERE (price = ? OR price = ?) AND title LIKE ?"},
	{"mysql", "SELECT DISTINCT `title` FROM `books` ORDER BY title"},
	{"mysql", "SELECT authors.name, sum(books.price) as total FROM `books` left join authors on authors.id = books.author_id GROUP BY `authors`.`name` HAVING sum(books.price) > ? ORDER BY total desc LIMIT ?"},
	{"mysql", "SELECT * FROM books WHERE id = ?"},
	{"mysql", "UPDATE `books` SET `price`=? WHERE id = ?"},
	{"mysql", "INSERT INTO `books` (`title`,`price`) VALUES (?,?)"},
	{"mysql", "SELECT `authors`.`id`,`authors`.`author_id`,`authors`.`title`,`authors`.`price` FROM `authors`"},
	{"mysql", "SELECT * FROM `books` WHERE EXISTS (SELECT 1 FROM authors WHERE authors.id = books.author_id)"},
	{"mysql", "SELECT * FROM `books` ORDER BY `price` DESC,`books`.`id` LIMIT ?"},
	{"mysql", "SELECT * FROM `books` ORDER BY `books`.`id` DESC LIMIT ?"},
	{"postgres", "SELECT \"books\".\"id\",\"books\".\"author_id\",\"books\".\"title\",\"books\".\"price\",\"Author\".\"id\" AS \"Author__id\",\"Author\".\"name\" AS \"Author__name\" FROM \"books\" LEFT JOIN \"authors\" \"Author\" ON \"books\".\"author_id\" = \"Author\".\"id\" WHERE books.price > $1 ORDER BY books.id desc LIMIT $2 OFFSET $3"},
	{"postgres", "SELECT * FROM \"authors\""},
	{"postgres", "SELECT \"books\".\"id\",\"books\".\"author_id\",\"books\".\"title\",\"books\".\"price\" FROM \"books\" JOIN authors a2 ON a2.id = books.author_id WHERE a2.name = $1"},
	{"postgres", "SELECT count(*) FROM \"books\" WHERE price > $1"},
	{"postgres", "SELECT author_id, count(*) as c FROM \"books\" GROUP BY \"author_id\" HAVING count(*) > $1"},
	{"postgres", "SELECT * FROM \"books\" WHERE author_id IN (SELECT id FROM \"authors\" WHERE name = $1)"},
	{"postgres", "SELECT * FROM (SELECT \"author_id\" FROM \"books\") as sub"},
	{"postgres", "INSERT INTO \"books\" (\"author_id\",\"title\",\"price\",\"id\") VALUES ($1,$2,$3,$4) ON CONFLICT (\"id\") DO UPDATE SET \"title\"=\"excluded\".\"title\",\"price\"=\"excluded\".\"price\" RETURNING \"id\""},
	{"postgres", "INSERT INTO \"books\" (\"author_id\",\"title\",\"price\",\"id\") VALUES ($1,$2,$3,$4),($5,$6,$7,$8) ON CONFLICT (\"id\") DO UPDATE SET \"author_id\"=\"excluded\".\"author_id\",\"title\"=\"excluded\".\"title\",\"price\"=\"excluded\".\"price\" RETURNING \"id\""},
	{"postgres", "INSERT INTO \"books\" (\"author_id\",\"title\",\"price\",\"id\") VALUES ($1,$2,$3,$4) ON CONFLICT DO NOTHING RETURNING \"id\""},
	{"postgres", "UPDATE \"books\" SET \"price\"=price + $1,\"title\"=$2 WHERE \"id\" = $3"},
	{"postgres", "UPDATE \"books\" SET \"price\"=(SELECT max(price) FROM books b2) WHERE id = $1"},
	{"postgres", "DELETE FROM \"books\" WHERE price < $1"},
	{"postgres", "SELECT * FROM \"books\" WHERE id = $1 FOR UPDATE SKIP LOCKED"},
	{"postgres", "SELECT * FROM \"books\" FOR SHARE OF \"books\""},
	{"postgres", "SELECT * FROM \"books\" OFFSET $1"},
	{"postgres", "SELECT * FROM \"books\" ORDER BY title LIMIT $1 OFFSET $2"},
	{"postgres", "SELECT * FROM \"books\" WHERE (price = $1 OR price = $2) AND title LIKE $3"},
	{"postgres", "SELECT DISTINCT \"title\" FROM \"books\" ORDER BY title"},
	{"postgres", "SELECT authors.name, sum(books.price) as total FROM \"books\" left join authors on authors.id = books.author_id GROUP BY \"authors\".\"name\" HAVING sum(books.price) > $1 ORDER BY total desc LIMIT $2"},
	{"postgres", "SELECT * FROM books WHERE id = $1"},
	{"postgres", "UPDATE \"books\" SET \"price\"=$1 WHERE id = $2"},
	{"postgres", "INSERT INTO \"books\" (\"title\",\"price\") VALUES ($1,$2) RETURNING \"id\""},
	{"postgres", "SELECT \"authors\".\"id\",\"authors\".\"author_id\",\"authors\".\"title\",\"authors\".\"price\" FROM \"authors\""},
	{"postgres", "SELECT * FROM \"books\" WHERE EXISTS (SELECT 1 FROM authors WHERE authors.id = books.author_id)"},
	{"postgres", "SELECT * FROM \"books\" ORDER BY \"price\" DESC,\"books\".\"id\" LIMIT $1"},
	{"postgres", "SELECT * FROM \"books\" ORDER BY \"books\".\"id\" DESC LIMIT $1"},
	{"sqlite", "SELECT `books`.`id`,`books`.`author_id`,`books`.`title`,`books`.`price`,`Author`.`id` AS `Author__id`,`Author`.`name` AS `Author__name` FROM `books` LEFT JOIN `authors` `Author` ON `books`.`author_id` = `Author`.`id` WHERE books.price > ? ORDER BY books.id desc LIMIT 10 OFFSET 20"},
	{"sqlite", "SELECT * FROM `authors`"},
	{"sqlite", "SELECT `books`.`id`,`books`.`author_id`,`books`.`title`,`books`.`price` FROM `books` JOIN authors a2 ON a2.id = books.author_id WHERE a2.name = ?"},
	{"sqlite", "SELECT count(*) FROM `books` WHERE price > ?"},
	{"sqlite", "SELECT author_id, count(*) as c FROM `books` GROUP BY `author_id` HAVING count(*) > ?"},
	{"sqlite", "SELECT * FROM `books` WHERE author_id IN (SELECT id FROM `authors` WHERE name = ?)"},
	{"sqlite", "SELECT * FROM (SELECT `author_id` FROM `books`) as sub"},
	{"sqlite", "INSERT INTO `books` (`author_id`,`title`,`price`,`id`) VALUES (?,?,?,?) ON CONFLICT (`id`) DO UPDATE SET `title`=`excluded`.`title`,`price`=`excluded`.`price` RETURNING `id`"},
	{"sqlite", "INSERT INTO `books` (`author_id`,`title`,`price`,`id`) VALUES (?,?,?,?),(?,?,?,?) ON CONFLICT (`id`) DO UPDATE SET `author_id`=`excluded`.`author_id`,`title`=`excluded`.`title`,`price`=`excluded`.`price` RETURNING `id`"},
	{"sqlite", "INSERT INTO `books` (`author_id`,`title`,`price`,`id`) VALUES (?,?,?,?) ON CONFLICT DO NOTHING RETURNING `id`"},
	{"sqlite", "UPDATE `books` SET `price`=price + ?,`title`=? WHERE `id` = ?"},
	{"sqlite", "UPDATE `books` SET `price`=(SELECT max(price) FROM books b2) WHERE id = ?"},
	{"sqlite", "DELETE FROM `books` WHERE price < ?"},
	{"sqlite", "SELECT * FROM `books` WHERE id = ? "},
	{"sqlite", "SELECT * FROM `books` "},
	{"sqlite", "SELECT * FROM `books` LIMIT -1 OFFSET 5"},
	{"sqlite", "SELECT * FROM `books` ORDER BY title LIMIT 5 OFFSET 5"},
	{"sqlite", "SELECT * FROM `books` WHERE (price = ? OR price = ?) AND title LIKE ?"},
	{"sqlite", "SELECT DISTINCT `title` FROM `books` ORDER BY title"},
	{"sqlite", "SELECT authors.name, sum(books.price) as total FROM `books` left join authors on authors.id = books.author_id GROUP BY `authors`.`name` HAVING sum(books.price) > ? ORDER BY total desc LIMIT 3"},
	{"sqlite", "SELECT * FROM books WHERE id = ?"},
	{"sqlite", "UPDATE `books` SET `price`=? WHERE id = ?"},
	{"sqlite", "INSERT INTO `books` (`title`,`price`) VALUES (?,?) RETURNING `id`"},
	{"sqlite", "SELECT `authors`.`id`,`authors`.`author_id`,`authors`.`title`,`authors`.`price` FROM `authors`"},
	{"sqlite", "SELECT * FROM `books` WHERE EXISTS (SELECT 1 FROM authors WHERE authors.id = books.author_id)"},
	{"sqlite", "SELECT * FROM `books` ORDER BY `price` DESC,`books`.`id` LIMIT 1"},
	{"sqlite", "SELECT * FROM `books` ORDER BY `books`.`id` DESC LIMIT 1"},
}

// SQL that GORM v1.31 generates (DryRun) with the mysql,
// postgres and glebarez/sqlite dialectors reads as exactly its tables.
func TestGORMsSQLReadsAsExactlyItsTables(t *testing.T) {
	target := regexp.MustCompile("(?i)(?:FROM|JOIN|INTO|UPDATE)\\s+[`\"]?(books|authors)\\b")
	for _, c := range gormStatements {
		s, err := Read(c[0], c[1])
		want := map[string]bool{}
		for _, m := range target.FindAllStringSubmatch(c[1], -1) {
			want[m[1]] = true
		}
		got := map[string]bool{}
		for _, tb := range s.Tables {
			got[tb.Name] = true
		}
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("%s: Read(%q) = %q, %v; want %v", c[0], c[1], format(s.Tables), err, want)
		}
	}
}
