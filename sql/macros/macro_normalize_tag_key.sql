-- A tag key in canonical form: trimmed, lower case, provider prefixes removed, inner spaces as '_'.
-- "resourceTags/user:Team", "user:team", "user_team", " Team " -> "team"
create or replace temp macro normalize_tag_key(k) as
    regexp_replace(
        regexp_replace(lower(trim(k)), '^(resourcetags/)?(user:|user_)', ''),
        '\s+', '_', 'g'
    );
