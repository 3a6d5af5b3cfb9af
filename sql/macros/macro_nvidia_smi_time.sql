-- nvidia-smi's own timestamp form (`2026/11/30 01:42:29.348`, local time) -> TIMESTAMP; NULL for any other
-- text. Read only from a digit with the slash fifth: strptime's %Y also reads `26/11/30` and ` 026/11/30`
-- as the year 26, which no capture means.
create or replace temp macro nvidia_smi_time(ts) as
    case
        when left(ts, 1) between '0' and '9' and strpos(ts, '/') = 5
            then try_strptime(ts, '%Y/%m/%d %H:%M:%S.%g')
    end;
