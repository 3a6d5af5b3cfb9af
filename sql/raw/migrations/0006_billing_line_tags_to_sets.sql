-- schema version 6: lines stored before version 5 carried their own tags (tags, x_tags_raw and the five
-- canonical columns). They now point at a tag set like every later line: each distinct tag set among
-- them is stored once in billing_tag_sets (id: the hash of its raw text), the lines keep its id, and the
-- tag columns leave billing_lines. So the `tags:` re-resolution of every billing ingest reaches them too,
-- not only once their month is restated. A warehouse whose billing_lines never stored tag columns gains
-- them empty and loses them again here. billing_tag_sets is created as version 5 defined it when the
-- upgrade starts before version 5 (new tables are otherwise created after the migrations).
drop view if exists billing_line_items;
create table if not exists billing_tag_sets (
    x_tag_set ubigint primary key,
    tags map(varchar, varchar),
    x_tags_raw json,
    team varchar,
    project varchar,
    owner varchar,
    job_id varchar,
    x_host varchar
);
alter table billing_lines add column if not exists x_tag_set ubigint;
alter table billing_lines add column if not exists tags map(varchar, varchar);
alter table billing_lines add column if not exists x_tags_raw json;
alter table billing_lines add column if not exists team varchar;
alter table billing_lines add column if not exists project varchar;
alter table billing_lines add column if not exists owner varchar;
alter table billing_lines add column if not exists job_id varchar;
alter table billing_lines add column if not exists x_host varchar;
-- a set's id: the hash of the raw tags, else of the normalised ones, else of the canonical columns alone
-- (a line written by hand may carry only `team`)
create temp macro _line_tags_key(x_tags_raw, tags, team, project, owner, job_id, x_host) as
    coalesce(
        x_tags_raw::varchar,
        tags::varchar,
        case when coalesce(team, project, owner, job_id, x_host) is not null then
            to_json({'team': team, 'project': project, 'owner': owner, 'job_id': job_id, 'x_host': x_host})::varchar
        end
    );
insert into billing_tag_sets (x_tag_set, tags, x_tags_raw, team, project, owner, job_id, x_host)
select
    h, any_value(tags), any_value(x_tags_raw), any_value(team), any_value(project), any_value(owner),
    any_value(job_id), any_value(x_host)
from (
    select hash(_line_tags_key(x_tags_raw, tags, team, project, owner, job_id, x_host)) as h, *
    from billing_lines
    where x_tag_set is null and _line_tags_key(x_tags_raw, tags, team, project, owner, job_id, x_host) is not null
)
where h not in (select x_tag_set from billing_tag_sets)
group by h;
update billing_lines set x_tag_set = hash(_line_tags_key(x_tags_raw, tags, team, project, owner, job_id, x_host))
where x_tag_set is null and _line_tags_key(x_tags_raw, tags, team, project, owner, job_id, x_host) is not null;
drop macro _line_tags_key;
alter table billing_lines drop column tags;
alter table billing_lines drop column x_tags_raw;
alter table billing_lines drop column team;
alter table billing_lines drop column project;
alter table billing_lines drop column owner;
alter table billing_lines drop column job_id;
alter table billing_lines drop column x_host;
